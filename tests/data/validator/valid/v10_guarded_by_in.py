# A key tested with `in` before use is optional on purpose.
me = github_enterprise_get_me()
if "company" in me:
    print(me["company"])
if "twitter_username" in me.keys():
    print(me["twitter_username"])
result = me["login"]
