# Echo in a loop, strip the prefix, join.
# result: "alpha-beta-gamma"
words = ['alpha', 'beta', 'gamma']
outs = []
for w in words:
    text = everything_echo(message=w)
    outs.append(str(text).replace('Echo: ', ''))
result = '-'.join(outs)
