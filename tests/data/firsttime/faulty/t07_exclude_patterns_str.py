# A list argument given one string.
# expect: `excludePatterns` must be array (list), got str '*.md'
# expect: Wrap it in a list: ['*.md']
result = filesystem_directory_tree(path='.', excludePatterns='*.md')
