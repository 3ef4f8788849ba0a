# A slice of an array keeps the element shape.
# expect: github_enterprise_search_issues: result['items'][0] has no field `titel` (line 4). Did you mean `title`?
r = github_enterprise_search_issues(q="is:pr", per_page=50)
top = r["items"][:5][0]["titel"]
result = top
