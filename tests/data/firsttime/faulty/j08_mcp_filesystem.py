# mcp namespace, filesystem.
# expect: Call `filesystem_list_allowed_directories(...)`
dirs = mcp.filesystem.list_allowed_directories()
result = dirs
