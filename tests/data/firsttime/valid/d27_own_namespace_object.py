# A user object called mcp.
# result: "abab"
class NS:
    def echo(self, message):
        return message * 2
mcp = NS()
result = mcp.echo(message='ab')
