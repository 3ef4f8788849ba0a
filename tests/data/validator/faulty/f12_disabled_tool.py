# A tool that exists upstream but is disabled in the configuration.
# expect: `everything_get_env` is disabled in this gateway's configuration (line 4).
import os
env = everything_get_env()
result = {"env": env, "pid": os.getpid()}
