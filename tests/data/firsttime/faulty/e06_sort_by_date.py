# sortBy that is not offered.
# expect: `sortBy` must be one of 'name', 'size'; got 'date'
result = filesystem_list_directory_with_sizes(path='.', sortBy='date')
