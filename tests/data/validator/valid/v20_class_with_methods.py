# Methods named like SDK functions, called as attributes.
class Store:
    def memory_create_entities(self, entities):
        return {"stored": len(entities)}

    def everything_echo(self, **kw):
        return kw

s = Store()
a = s.memory_create_entities([1, 2, 3])
b = s.everything_echo(whatever=1, mesage="x")
result = (a, b)
