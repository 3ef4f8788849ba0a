# Options object for echo.
# expect: pass arguments as keywords: everything_echo(message='hi')
result = everything_echo({'message': 'hi'})
