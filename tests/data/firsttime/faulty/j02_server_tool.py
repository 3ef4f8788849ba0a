# <server>.<tool>.
# expect: Call `everything_echo(...)`
result = everything.echo(message='hi')
