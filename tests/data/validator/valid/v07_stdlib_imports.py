# Standard library calls and attribute calls are never SDK calls.
import json
import re
from collections import Counter, defaultdict
from datetime import datetime, timezone
text = filesystem_read_text_file(path="/tmp/log.txt")
words = re.findall(r"\w+", str(text["content"]))
counts = Counter(words).most_common(5)
by_len = defaultdict(list)
for w in words:
    by_len[len(w)].append(w)
stamp = datetime.now(timezone.utc).isoformat()
result = json.dumps({"top": counts, "at": stamp, "lens": sorted(by_len)})
