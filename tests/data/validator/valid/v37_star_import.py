# A star import may bind anything.
from math import *
angle = radians(30)
result = {"sin": sin(angle), "pi": pi, "g": memory_read_graph()}
