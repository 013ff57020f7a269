check STATUS=2 'no command' '' 'usage: tally COMMAND < numbers'
check STATUS=2 'unknown command' '1\n' 'usage: tally COMMAND < numbers' frobnicate
