# An import alias that looks like a typo of an SDK function.
from json import dumps as everythin_echo
from os.path import join as memory_read_grph
result = everythin_echo({"p": memory_read_grph("/tmp", "x")})
