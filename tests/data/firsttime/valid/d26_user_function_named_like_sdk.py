# The program's own function shadows a name.
# result: "mine:42"
def everything_echo(message):
    return 'mine:' + str(message)
result = everything_echo(message=42)
