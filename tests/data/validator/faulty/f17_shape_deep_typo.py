# A misspelled field deep inside a result.
# expect: github_enterprise_search_issues: result['items'][0] has no field `numbr` (line 4). Did you mean `number`?
issues = github_enterprise_search_issues(q="is:open label:bug")
first = issues["items"][0]["numbr"]
result = first
