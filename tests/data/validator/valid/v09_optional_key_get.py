# .get() for keys the shape does not know is fine.
r = github_enterprise_search_issues(q="is:open")
milestone = r.get("milestone")
first = r["items"][0] if r["items"] else {}
assignee = first.get("assignee", {}).get("login")
result = {"total": r["total_count"], "milestone": milestone, "assignee": assignee}
