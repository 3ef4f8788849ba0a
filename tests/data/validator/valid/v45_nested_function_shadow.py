# A nested function shadows an SDK name locally.
def outer():
    def everything_echo(**kw):
        return kw
    return everything_echo(anything="goes", mesage=1)

result = (outer(), everything_echo(message="real one"))
