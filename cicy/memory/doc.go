// Package memory is the long-term memory of a cicy pane: plain files a person can read and edit under
// <workspace>/.cicy/memory/, and the text handling of the recognizer, the aux
// LLM call that decides what deserves to be remembered.
//
// Layout of the folder:
//
//	<slug>.md    one memory per file: frontmatter (mem_id, type, title,
//	             salience, tags, updated) then the content
//	MEMORY.md    the index, rebuilt after every change; exactly the text the
//	             turn loop injects as the <memories> block (cut at 6,000 bytes)
//	_archive/    memories moved out of the way (overflow, `memory rm`);
//	             nothing is ever deleted
//
// The store differs from the original on purpose (research cicy-original.md
// §9 item 9): recency comes from the `updated` frontmatter, never from file
// times; two mem_ids that make the same slug get distinct files (<slug>_2.md,
// …) instead of overwriting each other; a corrupt or hand-broken file is
// skipped and reported, never fatal; every write is atomic (temp file in the
// same folder, fsync, rename), so a crash leaves the old or the new file,
// never half of one.
//
// The recognizer side (recognizer.go) builds the aux call's system prompt and
// user message and extracts the {"memories":[…]} document from the model's
// answer, tolerating prose and code fences around it. The buffer, the
// triggers and the call itself live in package cicy.
package memory
