# A typo inside an f-string.
# expect: github_enterprise_search_issues: result['items'][0]['user'] has no field `logn` (line 4). Did you mean `login`?
r = github_enterprise_search_issues(q="author:me")
print(f"first issue by {r['items'][0]['user']['logn']}")
