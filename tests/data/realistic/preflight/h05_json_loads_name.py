# Held out (written after the fixes, measured before tuning): json loads name.
# class: heldout
# expect: json.loads(result['content'])
import json
listing = filesystem_list_directory(path='.')
data = json.loads(listing)
