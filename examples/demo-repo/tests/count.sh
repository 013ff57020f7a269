check 'count of three' '5\n5\n5\n' 3 count
check 'count of none' '' 0 count
