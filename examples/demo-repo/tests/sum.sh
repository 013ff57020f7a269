check 'sum of three' '1\n2\n3\n' 6 sum
check 'sum of negatives' '-4\n1\n' -3 sum
