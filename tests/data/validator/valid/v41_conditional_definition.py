# A helper defined conditionally.
import os
if os.environ.get("DEBUG"):
    def filesystem_log(msg):
        print("debug:", msg)
else:
    def filesystem_log(msg):
        pass
filesystem_log("start")
result = filesystem_list_allowed_directories()
