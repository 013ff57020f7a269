// Package termsafe keeps agents' text from steering the user's terminal.
//
// Text from agents (answers, task results and errors, reasons, screens)
// reaches the user's terminal through the CLI's human-readable output. A
// worker's output can hold sequences a terminal obeys: OSC 52 writes the
// clipboard, OSC 0 sets the window title, others move the cursor or
// redraw lines to hide what was printed. So, like less and git without
// -R, the CLI prints through a Writer: escape sequences (ESC, and the
// 8-bit CSI, OSC, DCS, … of C1) are removed, and the other control
// characters are shown in caret notation (^G, ^H, ^M), except newline and
// tab. Text does the same to one value (a table's cell); JSON makes JSON
// output safe without changing what it says.
//
// It is a package of its own because it is a parser (ECMA-48, as a
// terminal reads) with its own tests and no part in the commands: the CLI
// decides which commands print through it (--raw, the commands with a
// terminal or protocol of their own), this package only how.
package termsafe
