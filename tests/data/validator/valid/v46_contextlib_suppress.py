# contextlib.suppress(KeyError) guards like try/except.
from contextlib import suppress
me = github_enterprise_get_me()
bio = None
with suppress(KeyError):
    bio = me["bio"]
result = {"login": me.login, "bio": bio}
