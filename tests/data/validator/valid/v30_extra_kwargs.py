# A tool whose schema allows additional properties takes any keyword.
r = github_enterprise_search_issues(q="is:issue", sort="created", order="desc", page=2)
r2 = github_enterprise_search_issues("is:pr", 20, state="open")
result = [i["number"] for i in r["items"]] + [i["title"] for i in r2["items"]]
