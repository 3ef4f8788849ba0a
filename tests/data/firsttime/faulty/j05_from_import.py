# from <server> import <tool>.
# expect: `from everything import echo` (line 4)
# expect: Call `everything_echo(...)`
from everything import echo
result = echo(message='hi')
