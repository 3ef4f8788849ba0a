# update() with another result.
me = github_enterprise_get_me()
w = everything_get_structured_content(location="Chicago")
me.update(w)
result = me["conditions"]
