# Names unrelated to the SDK are not judged (the runtime reports a NameError itself).
try:
    value = compute_total(3)
except NameError:
    value = None
result = value
