"""search_tools() / describe() / help() inside a run (codemcp_rt.discovery)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import unittest

from support import RuntimeTest, sdk_source

from codemcp_rt import discovery, runner, sdk, search, stem

TOOLS = {
    "gh_issues_create": ("gh", "issues_create", True),
    "gh_issues_create_comment": ("gh", "issues_create_comment", True),
    "gh_issues_list_for_repo": ("gh", "issues_list_for_repo", False),
    "gh_repos_delete": ("gh", "repos_delete", True),
    "gh_repos_remove_collaborator": ("gh", "repos_remove_collaborator", True),
    "gh_pulls_list": ("gh", "pulls_list", False),
    "fs_readTextFile": ("fs", "readTextFile", False),
    "fs_create-directory": ("fs", "create-directory", True),
}
SUMMARIES = {
    "gh_issues_create": "Create an issue",
    "gh_issues_create_comment": "Create an issue comment",
    "gh_issues_list_for_repo": "List repository issues",
    "gh_repos_delete": "Delete a repository",
    "gh_repos_remove_collaborator": "Remove a repository collaborator",
    "gh_pulls_list": "List pull requests",
    "fs_readTextFile": "Read a text file from disk",
    "fs_create-directory": "Create a directory",
}
# Python identifiers of the functions (sdkgen sanitises "-" to "_").
PY = {fn.replace("-", "_"): v for fn, v in TOOLS.items()}
CATALOG = {fn.replace("-", "_"): ["%s(owner: str, repo: str)" % fn.replace("-", "_"), SUMMARIES[fn]] for fn in TOOLS}


class Words(unittest.TestCase):
    def test_cases_split_and_stem(self) -> None:
        self.assertEqual(discovery.words("readTextFile"), ["read", "text", "file"])
        self.assertEqual(discovery.words("create-directory"), ["creat", "directori"])
        self.assertEqual(discovery.words("list_pull_requests"), ["list", "pull", "request"])
        self.assertEqual(discovery.words("HTTPServer v2"), ["http", "server", "v", "2"])
        self.assertEqual(discovery.words("Creating the repositories"), ["creat", "repositori"])
        self.assertEqual(discovery.words(""), [])

    def test_porter_stems_meet(self) -> None:
        # the forms of one word share a stem (Porter), British spellings fold to -ize
        for group in (["invite", "invitation", "invited"], ["reviewer", "reviews", "reviewing"],
                      ["followers", "following"], ["protection", "protected"],
                      ["organisation", "organization", "organizations"]):
            self.assertEqual(len({stem.stem(w) for w in group}), 1, group)
        self.assertEqual(stem.stem("ponies"), "poni")  # Porter's own examples
        self.assertEqual(stem.stem("relational"), "relat")
        self.assertEqual(stem.stem("hopping"), "hop")
        self.assertEqual(stem.stem("a1"), "a1")


class Query(unittest.TestCase):
    """How a task's words are read (codemcp_rt.search), on a small index."""

    def index(self) -> "search.Index":
        names = ["gh_issues_lock", "gh_issues_pin", "gh_issues_list", "gh_issues_get", "gh_meta_get_octocat", "gh_repos_get",
                 "gh_users_follow", "gh_codespaces_start", "fs_read_file", "gh_repos_delete_subscription",
                 "gh_repos_get_subscription"]
        info = {n: {"server": n.split("_")[0], "tool": n.split("_", 1)[1], "summary": n.split("_", 1)[1].replace("_", " "),
                    "doc": "", "params": [], "signature": n + "()"} for n in names}
        info["gh_issues_lock"]["signature"] = 'gh_issues_lock(lock_reason: Literal["off-topic", "too heated"] | None = None)'
        return search.Index(names, info)

    def top(self, idx: "search.Index", q: str) -> str:
        return idx.names[idx.search(q, 1)[0]]

    def test_enum_values_are_searched(self) -> None:
        idx = self.index()
        ranked = [idx.names[d] for d in idx.search("the discussion got too heated", 10)]
        # lock's reason "too heated" (an enum value) finds it; pin, as close a name, is not found
        self.assertIn("gh_issues_lock", ranked)
        self.assertNotIn("gh_issues_pin", ranked)

    def test_values_count_little(self) -> None:
        idx = self.index()
        q, _ = idx._query("show octocat/hello-world and read notes.txt")
        weights = dict(q)
        self.assertLess(weights["octocat"], 0.5)
        self.assertLess(weights["txt"], 0.5)
        self.assertEqual(weights["file"], search._FILE_HINT)  # a file name hints at files
        self.assertEqual(self.top(idx, "get the repo octocat/hello-world"), "gh_repos_get")

    def test_questions_and_plurals_ask_for_listings(self) -> None:
        idx = self.index()
        self.assertTrue(idx._query("which issues are open?")[1])
        self.assertFalse(idx._query("can you open an issue?")[1])
        self.assertEqual(self.top(idx, "which issues are locked?"), "gh_issues_list")

    def test_aspect_verbs_yield_to_the_gerund(self) -> None:
        idx = self.index()
        self.assertEqual(self.top(idx, "start following torvalds"), "gh_users_follow")
        self.assertEqual(self.top(idx, "stop watching this repo"), "gh_repos_delete_subscription")


class Intent(unittest.TestCase):
    """What a task asks for beyond its words (codemcp_rt.search): read or change, phrasal
    verbs, an unknown verb, who-questions, adjacent words, possessives."""

    @staticmethod
    def index(docs: dict[str, str], sigs: dict[str, str] | None = None) -> "search.Index":
        # unrelated functions around them, so that the words of the ones under test are rare
        docs = dict(docs, **{"zz_filler%d_%s" % (k, w): "Filler %s number %d" % (w, k)
                             for k, w in enumerate(("alpha beta gamma delta epsilon zeta theta kappa lambda sigma " * 4).split())})
        info = {n: {"server": n.split("_")[0], "tool": n.split("_", 1)[1], "summary": summary, "doc": "",
                    "params": [], "signature": (sigs or {}).get(n, n + "()")} for n, summary in docs.items()}
        return search.Index(list(docs), info)

    @staticmethod
    def ranked(idx: "search.Index", q: str) -> list[str]:
        return [idx.names[d] for d in idx.search(q, 5)]

    def test_a_change_prefers_functions_that_change(self) -> None:
        idx = self.index({"gh_pulls_get_review": "Get a review for a pull request",
                          "gh_pulls_create_review": "Create a review for a pull request",
                          "gh_repos_get_pages": "Get a GitHub Pages site",
                          "gh_repos_update_information_about_pages_site": "Update information about a GitHub Pages site"},
                         {"gh_pulls_create_review": 'gh_pulls_create_review(event: Literal["APPROVE", "COMMENT"] | None = None)',
                          "gh_pulls_get_review": 'gh_pulls_get_review(review_id: int)'})
        self.assertEqual(idx.kinds[:4], ["r", "w", "r", "w"])
        self.assertEqual(self.ranked(idx, "approve the pull request")[0], "gh_pulls_create_review")
        self.assertEqual(self.ranked(idx, "show the pages site")[0], "gh_repos_get_pages")

    def test_file_storage_words_reach_the_api_terms(self) -> None:
        idx = self.index({"box_post_files_id_copy": "Copy file", "box_post_files_content": "Upload file",
                          "box_get_folders_trash_items": "List trashed items", "box_get_folders_id_items": "List items in folder",
                          "box_get_files_id_thumbnail": "Get file thumbnail", "box_get_files_id": "Get file information"})
        self.assertEqual(self.ranked(idx, "duplicate the template file")[0], "box_post_files_id_copy")
        self.assertEqual(self.ranked(idx, "what's in the recycle bin")[0], "box_get_folders_trash_items")
        self.assertEqual(self.ranked(idx, "small preview picture of the file")[0], "box_get_files_id_thumbnail")

    def test_the_sdk_mutation_flag_decides_when_the_name_has_no_verb(self) -> None:
        # names without a verb ("meeting", "meetingStatus"): the SDK's own flag
        # (sdkgen/mutation.c) says which function reads and which changes
        idx = self.index({"zm_meeting": "A meeting", "zm_meetingStatus": "A meeting's status",
                          "zm_meetingUpdate": "Update a meeting"})
        self.assertEqual(idx.kinds[:3], ["", "", "w"])  # without the flag: the name's verb only
        for fn, mutation in (("zm_meeting", False), ("zm_meetingStatus", True), ("zm_meetingUpdate", False)):
            idx.info[fn]["mutation"] = mutation
        flagged = search.Index(idx.names, idx.info)
        self.assertEqual(flagged.kinds[:3], ["r", "w", "w"])  # a name's verb still decides

    def test_phrasal_verbs_split_by_their_object(self) -> None:
        idx = self.index({"gh_issues_remove_label": "Remove a label from an issue",
                          "gh_issues_list_labels_on_issue": "List labels for an issue"})
        weights = dict(idx._query("take the bug label off issue 9")[0])
        self.assertEqual(weights.get(search.stem("remove")), 1.0)
        self.assertEqual(self.ranked(idx, "take the bug label off issue 9")[0], "gh_issues_remove_label")

    def test_an_unknown_first_word_is_a_verb_not_a_listing(self) -> None:
        idx = self.index({"gh_issues_list_labels_on_issue": "List labels for an issue",
                          "gh_issues_add_labels": "Add labels to an issue"})
        idx._query("slap a triage label on issue 88")
        self.assertTrue(idx._odd_verb)  # a verb the catalog never uses: no implicit listing
        self.assertEqual(idx._intent, "w")  # an imperative with its object's determiner: a change
        idx._query("slap triage labels on issue 88")
        self.assertTrue(idx._odd_verb)
        self.assertEqual(idx._intent, "")  # no determiner: no guess at reading or changing
        idx._query("labels on issue 88")
        self.assertFalse(idx._odd_verb)  # a word the catalog has: a listing, as before
        self.assertEqual(idx._intent, "r")

    def test_who_questions_reach_agent_nouns(self) -> None:
        idx = self.index({"gh_activity_list_watchers_for_repo": "List watchers",
                          "gh_activity_list_repos_watched_by_user": "List repositories watched by a user"})
        self.assertEqual(dict(idx._query("who is watching the repo")[0]).get(search.stem("watcher")), search._AGENT_WEIGHT)
        self.assertNotIn(search.stem("watcher"), dict(idx._query("what is watching the repo")[0]))

    def test_adjacent_words_rank_higher(self) -> None:
        # the same words, as many; only the second has "deploy key" side by side
        idx = self.index({"gh_keys_delete_one": "Delete key of deploy",
                          "gh_keys_delete_two": "Delete deploy key"})
        self.assertEqual(self.ranked(idx, "delete the deploy key")[0], "gh_keys_delete_two")

    def test_negated_words_count_little(self) -> None:
        idx = self.index({"gh_pulls_merge": "Merge a pull request", "gh_pulls_update": "Update a pull request"})
        weights = dict(idx._query("close pull request 42 without merging it")[0])
        self.assertLess(weights[search.stem("merging")], 0.5)
        self.assertEqual(self.ranked(idx, "close pull request 42 without merging it")[0], "gh_pulls_update")

    def test_possessives_count_less_than_me(self) -> None:
        idx = self.index({"gh_pulls_get": "Get a pull request"})
        weights = dict(idx._query("close my pull request")[0])
        self.assertLess(weights[search.stem("my")], 1.0)


class SixthPass(unittest.TestCase):
    """The sixth pass's general reading rules (codemcp_rt.search), each on a small index."""

    ranked = staticmethod(Intent.ranked)

    def test_an_imperative_verb_before_its_object(self) -> None:
        # "paste" is a word of the catalog (a gist is a paste); before "this snippet" it is the verb
        idx = Intent.index({"gh_gists_list": "List gists (pastes) of the user", "gh_gists_create": "Create a gist (a new paste)"})
        idx._query("paste this snippet into a secret gist")
        self.assertTrue(idx._odd_verb)
        self.assertEqual(idx._intent, "w")
        self.assertEqual(self.ranked(idx, "paste this snippet into a secret gist")[0], "gh_gists_create")
        idx._query("give me a sample")  # asking to be given something reads
        self.assertEqual(idx._intent, "r")
        idx._query("gists pastes")  # no determiner after the first word: a listing as before
        self.assertFalse(idx._odd_verb)
        self.assertEqual(idx._intent, "r")

    def test_asides_negations_and_exclusions(self) -> None:
        idx = Intent.index({"gh_issues_list_events": "List issue events", "gh_issues_update_label": "Update a label"})
        w = dict(idx._query("list the events on issue 9 - renames, label changes")[0])
        self.assertEqual(w[search.stem("label")], search._CLAUSE)  # after " - ": an aside
        self.assertEqual(w[search.stem("events")], 1.0)
        self.assertEqual(self.ranked(idx, "list the events on issue 9 - renames, label changes, label updates")[0],
                         "gh_issues_list_events")
        w = dict(idx._query("push a fix to the file, no clone")[0])
        self.assertEqual(w[search.stem("clone")], search._NEG)
        w = dict(idx._query("besides me, who watches this repo")[0])
        self.assertLess(w[search.stem("me")], search._SELF_WEIGHT * 0.5)  # "besides me": not me
        self.assertNotIn(search.stem("besides"), w)

    def test_a_thesaurus_phrase_with_words_in_between(self) -> None:
        idx = Thesaurus().index({"gh_issues_lock": "Lock an issue", "gh_issues_list_comments": "List issue comments"})
        self.assertIn(idx._thesaurus("stop comments on it").split()[2], search._THES_TOKEN)  # the phrase itself
        toks = [t for t in idx._thesaurus("stop people from commenting on the issue").split() if t in search._THES_TOKEN]
        self.assertTrue(toks)  # two words in between
        self.assertIn(search.stem("lock"), set().union(*(search._THES_TOKEN[t] for t in toks)))
        self.assertEqual(self.ranked(idx, "stop people from commenting on the heated issue")[0], "gh_issues_lock")
        self.assertFalse([t for t in idx._thesaurus("stop the very many people from commenting").split()
                          if t in search._THES_TOKEN])  # more than two: not the phrase

    def test_get_all_lists(self) -> None:
        idx = Intent.index({"gh_repos_get_all_topics": "Get all repository topics"})
        self.assertIn("list", idx.name_words[0])
        self.assertNotIn("all", idx.name_words[0])

    def test_a_number_in_the_object_slot_is_an_issue_or_pull(self) -> None:
        idx = Intent.index({"gh_repos_merge": "Merge a branch", "gh_pulls_merge": "Merge a pull request"})
        w = dict(idx._query("squash #77 into main")[0])
        self.assertEqual(w[search.stem("pull")], search._NUMBER_HINT)
        self.assertEqual(self.ranked(idx, "merge #77 into main")[0], "gh_pulls_merge")
        self.assertEqual(dict(idx._query("close 230 as done")[0])[search.stem("issue")], search._NUMBER_HINT)
        self.assertNotIn(search.stem("issue"), dict(idx._query("add 5 and 7")[0]))  # numbers to add

    def test_a_typo_is_one_edit(self) -> None:
        for a, b in (("wokflow", "workflow"), ("reciept", "receipt"), ("issu", "issue"), ("isue", "issue")):
            self.assertTrue(search._one_edit(a, b), (a, b))
        self.assertFalse(search._one_edit("tech", "echo"))  # they share "ech", two edits apart
        idx = Intent.index({"ev_echo": "Echo a message", "ev_each": "Each thing"})
        self.assertNotIn(search.stem("echo"), idx._expand("tech"))
        self.assertIn(search.stem("echo"), idx._expand("ecoh"))

    def test_what_to_remember_is_a_value(self) -> None:
        idx = Intent.index({"mem_create_entities": "Create entities in the knowledge graph"})
        w = dict(idx._query("remember that Alice is the tech lead for Project Falcon")[0])
        self.assertEqual(w[search.stem("project")], search._VALUE_WEIGHT)
        self.assertEqual(w[search.stem("remember")], 1.0)

    def test_the_opposite_change_ranks_lower(self) -> None:
        # the same words; the adding one's longer summary would rank it second on words alone
        idx = Intent.index({"gh_issues_remove_assignees": "Remove assignees from an issue",
                            "gh_issues_add_assignees": "Adds one or more assignees to an issue for triage"})
        self.assertEqual(idx.polarity[:2], ["-", "+"])
        self.assertEqual(self.ranked(idx, "assign the bug to carol")[0], "gh_issues_add_assignees")
        self.assertEqual(self.ranked(idx, "list the bug's assignees")[0], "gh_issues_remove_assignees")  # no change asked

    def test_let_is_a_permission_and_where_a_search(self) -> None:
        idx = Intent.index({"gh_actions_set_allowed_actions": "Set allowed actions",
                            "gh_actions_list_workflows": "List workflows using actions",
                            "gh_search_code": "Search code", "gh_code_get_configuration": "Get code configuration"})
        self.assertIn(search.stem("allow"), dict(idx._query("only let this repo use verified actions")[0]))
        self.assertNotIn(search.stem("allow"), dict(idx._query("let me know the workflows")[0]))
        self.assertEqual(self.ranked(idx, "only let this repo use verified actions")[0], "gh_actions_set_allowed_actions")
        self.assertEqual(dict(idx._query("where in the code do we call auth")[0])[search.stem("search")], search._WHERE_HINT)
        self.assertEqual(self.ranked(idx, "where in the code do we call auth")[0], "gh_search_code")
        self.assertEqual(dict(idx._query("bugs mentioning segfault across github")[0])[search.stem("search")],
                         search._WHERE_HINT)

    def test_an_unknown_name_after_a_verb_or_to_is_a_person(self) -> None:
        idx = Intent.index({"gh_orgs_delete": "Delete an organization", "gh_orgs_remove_member": "Remove an organization member",
                            "gh_users_list": "List users"})
        self.assertEqual(dict(idx._query("kick mallory out of the org")[0]).get(search.stem("user")), search._PERSON_HINT)
        self.assertEqual(self.ranked(idx, "remove mallory from the org")[0], "gh_orgs_remove_member")
        self.assertNotIn(search.stem("user"), dict(idx._query("remove the org")[0]))
        self.assertNotIn(search.stem("user"), dict(idx._query("remove memebr from the org")[0]))  # a typo, not a name

    def test_develop_is_not_a_user(self) -> None:
        self.assertNotIn(search.stem("user"), search._SYN.get(search.stem("develop"), {}))


class SeventhPass(unittest.TestCase):
    """The seventh pass's general reading rules (codemcp_rt.search), each on a small index."""

    ranked = staticmethod(Intent.ranked)

    def test_noun_verbs_are_verbs_only_as_the_first_word(self) -> None:
        # "file a bug" creates; "the file tree" is a noun, not a creation
        idx = Intent.index({"gh_git_create_tree": "Create a tree", "gh_git_get_tree": "Get a tree",
                            "gh_issues_create": "Create an issue", "gh_issues_list": "List issues"})
        idx._query("show me the file tree")
        self.assertNotIn(search.stem("create"), idx._expand(search.stem("file")))
        self.assertEqual(self.ranked(idx, "give me the full file tree of the repo")[0], "gh_git_get_tree")
        idx._query("file a bug about the crash")
        self.assertIn(search.stem("create"), idx._expand(search.stem("file")))
        self.assertEqual(self.ranked(idx, "file a bug about the crash")[0], "gh_issues_create")

    def test_paste_is_not_past(self) -> None:
        # Porter stems "paste" to "past": "over the past year" is not about gists
        self.assertNotIn(search.stem("gist"), search._SYN.get(search.stem("past"), {}))
        idx = Intent.index({"gh_gists_list_commits": "List gist commits",
                            "gh_repos_get_commit_activity_stats": "Get the last year of commit activity, per week"})
        self.assertEqual(self.ranked(idx, "commits per week over the past year")[0], "gh_repos_get_commit_activity_stats")

    def test_constant_case_names_a_value_by_its_last_word(self) -> None:
        idx = Intent.index({"mem_open_nodes": "Open specific nodes in the knowledge graph by their names",
                            "gh_actions_update_repo_variable": "Update a repository variable",
                            "gh_actions_create_repo_secret": "Create or update a repository secret"})
        weights = dict(idx._query("bump the repo-level NODE_VERSION variable to 22")[0])
        self.assertEqual(weights[search.stem("node")], search._VALUE_WEIGHT)
        self.assertEqual(weights[search.stem("version")], 1.0)
        self.assertEqual(self.ranked(idx, "bump the repo-level NODE_VERSION variable to 22")[0],
                         "gh_actions_update_repo_variable")
        self.assertEqual(self.ranked(idx, "store our NPM_TOKEN for the workflows")[0], "gh_actions_create_repo_secret")

    def test_derived_nouns_meet_their_verbs(self) -> None:
        # Porter2's y rule ("deploy" stays, "deployment" -> "deploy"), and the -scription /
        # -istration nouns fold to their verbs
        for group in (["deploy", "deployment", "deployed"], ["subscribe", "subscription", "subscriptions"],
                      ["register", "registration", "registered"], ["key", "keys"]):
            self.assertEqual(len({stem.stem(w) for w in group}), 1, group)
        self.assertEqual(stem.stem("cry"), "cri")
        self.assertEqual(stem.stem("happy"), "happi")

    def test_left_is_remaining_only_after_have(self) -> None:
        idx = Intent.index({"gh_rate_limit_get": "Get rate limit status for the authenticated user",
                            "gh_checks_list_annotations": "List the annotations of a check run"})
        self.assertEqual(self.ranked(idx, "how many api calls do I have left")[0], "gh_rate_limit_get")
        self.assertEqual(self.ranked(idx, "show the annotations the linter left on the check")[0],
                         "gh_checks_list_annotations")
        idx._query("show what the linter left")
        self.assertNotIn(search.stem("rate"), idx._expand(search.stem("left")))

    def test_reply_on_the_ticket_is_an_imperative_and_telling_quotes(self) -> None:
        idx = Intent.index({"gh_issues_create_comment": "Create an issue comment",
                            "gh_issues_list_comments": "List issue comments"})
        weights = dict(idx._query("reply on the ticket telling them it's fixed in 3.1")[0])
        self.assertEqual(idx._intent, "w")  # "reply on the ...": the verb, a change
        self.assertEqual(weights[search.stem("fix")], search._VALUE_WEIGHT)  # what to tell them
        self.assertEqual(self.ranked(idx, "reply on the ticket telling them it's fixed in 3.1")[0],
                         "gh_issues_create_comment")
        idx._query("comments on the ticket")  # a plural first word: a listing as before
        self.assertEqual(idx._intent, "r")

    def test_what_a_search_looks_for_is_a_value(self) -> None:
        idx = Intent.index({"gh_search_issues": "Search issues and pull requests",
                            "mem_search_nodes": "Search for nodes in the knowledge graph memory",
                            "gh_repos_list_deployments": "List deployments"})
        weights = dict(idx._query("find issues mentioning memory leak")[0])
        self.assertEqual(weights[search.stem("memory")], search._VALUE_WEIGHT)
        self.assertEqual(self.ranked(idx, "find issues mentioning memory leak")[0], "gh_search_issues")
        weights = dict(idx._query("search my memory for anything about deployments")[0])
        self.assertEqual(weights[search.stem("deployments")], search._VALUE_WEIGHT)
        self.assertEqual(self.ranked(idx, "search my memory for anything about deployments")[0], "mem_search_nodes")

    def test_a_changes_every_is_a_quantity(self) -> None:
        idx = Intent.index({"gh_issues_list_labels_on_issue": "List labels for an issue",
                            "gh_issues_remove_all_labels": "Remove all labels from an issue"})
        self.assertEqual(self.ranked(idx, "strip every label off issue 301")[0], "gh_issues_remove_all_labels")
        self.assertEqual(self.ranked(idx, "show every label on issue 301")[0], "gh_issues_list_labels_on_issue")


class Thesaurus(unittest.TestCase):
    """Everyday words for the catalog's API terms (codemcp_rt.thesaurus, read by search.py):
    a phrase adds its term below an exact word, longer phrases first, and stays fast."""

    FUNCS = {"gh_actions_disable_workflow": "Disable a workflow", "gh_actions_get_workflow": "Get a workflow",
             "gh_actions_enable_workflow": "Enable a workflow",
             "gh_repos_redeliver_webhook_delivery": "Redeliver a delivery for a repository webhook",
             "gh_repos_get_webhook_delivery": "Get a delivery for a repository webhook",
             "gh_repos_create_deploy_key": "Create a deploy key", "gh_repos_create_webhook": "Create a webhook",
             "gh_issues_list_events_for_timeline": "List timeline events for an issue",
             "gh_issues_get": "Get an issue",
             "gh_copilot_list_copilot_seats": "List all Copilot seat assignments for an organization",
             "gh_repos_list_collaborators": "List repository collaborators"}

    def index(self, extra: dict[str, str] | None = None) -> "search.Index":
        return Intent.index(dict(self.FUNCS, **(extra or {})))

    def test_a_phrase_maps_to_the_api_term(self) -> None:
        idx = self.index()
        for q, want in (("pause the nightly workflow", "gh_actions_disable_workflow"),
                        ("resend the webhook delivery", "gh_repos_redeliver_webhook_delivery"),
                        ("add a machine key to the repo", "gh_repos_create_deploy_key"),
                        ("show the history of issue 5", "gh_issues_list_events_for_timeline"),
                        ("shut the nightly workflow off", "gh_actions_disable_workflow")):  # split phrase
            self.assertEqual(Intent.ranked(idx, q)[0], want, q)
        # an everyday verb that stands for a changing verb of the catalog is a verb: no listing
        idx._query("pause the nightly workflow")
        self.assertEqual(idx._intent, "w")

    def test_second_walk_concepts(self) -> None:
        # multi-word concepts of the second walk over the catalog's vocabulary (none on main)
        idx = self.index({"gh_orgs_remove_member": "Remove an organization member",
                          "gh_orgs_get": "Get an organization", "gh_orgs_list_members": "List organization members",
                          "gh_search_code": "Search code", "gh_projects_list_for_user": "List projects for user",
                          "gh_issues_lock": "Lock an issue", "gh_activity_get_thread": "Get a thread",
                          "gh_repos_download_zipball_archive": "Download a repository archive (zip)",
                          "gh_repos_download_tarball_archive": "Download a repository archive (tar)"})
        for q, want in (("offboard bob from the org", "gh_orgs_remove_member"),
                        ("grep across repos for TODO", "gh_search_code"),
                        ("the thread is a flame war, stop the arguing", "gh_issues_lock"),
                        ("download the source zip", "gh_repos_download_zipball_archive")):
            self.assertEqual(Intent.ranked(idx, q)[0], want, q)

    def test_an_exact_word_outranks_its_expansion(self) -> None:
        # "pause" stands for disable, but a function that says "pause" itself comes first
        idx = self.index({"gh_actions_pause_workflow": "Pause a workflow"})
        idx._query("pause the nightly workflow")
        exp = idx._expand(search.stem("pause"))
        self.assertEqual(exp[search.stem("pause")], 1.0)
        self.assertLess(exp[search.stem("disable")], 1.0)
        self.assertEqual(Intent.ranked(idx, "pause the nightly workflow")[:2],
                         ["gh_actions_pause_workflow", "gh_actions_disable_workflow"])
        # the API's own word ranks its function first as before
        self.assertEqual(Intent.ranked(idx, "disable the nightly workflow")[0], "gh_actions_disable_workflow")

    def test_longer_phrases_match_first(self) -> None:
        idx = self.index()
        # "who has access to copilot" (seats) is matched before "who has access" (collaborators)
        toks = [t for t in idx._thesaurus("who has access to copilot in the org").split() if t in search._THES_TOKEN]
        terms = set().union(*(search._THES_TOKEN[t] for t in toks)) if toks else set()
        self.assertIn(search.stem("seat"), terms)
        self.assertNotIn(search.stem("collaborator"), terms)
        self.assertEqual(Intent.ranked(idx, "who has access to copilot in the org")[0], "gh_copilot_list_copilot_seats")
        self.assertEqual(Intent.ranked(idx, "who has access to the repo")[0], "gh_repos_list_collaborators")

    def test_values_are_not_read_as_phrases(self) -> None:
        idx = self.index()
        # quoted text is a value, not the task's words; outside quotes the phrase is read
        self.assertEqual(idx._thesaurus('show "build machine" now'), 'show "build machine" now')
        self.assertNotEqual(idx._thesaurus("show the build machine now"), "show the build machine now")
        self.assertFalse(any(t in idx.postings for t in search._THES_TOKEN))  # tokens are never index words

    def test_search_stays_fast_with_the_thesaurus(self) -> None:
        # ~1,300 functions named from the thesaurus's own API terms, queried by its phrases
        from codemcp_rt.thesaurus import THESAURUS
        verbs = ["get", "list", "create", "update", "delete", "set"]
        docs: dict[str, str] = {}
        for k, term in enumerate(THESAURUS):
            for v in verbs:
                name = "gh_%s_%s_%d" % (v, term.replace(" ", "_"), k)
                docs[name] = "%s %s number %d" % (v, term, k)
        idx = Intent.index(docs)
        self.assertGreater(len(idx.names), 1200)
        phrases = [says.split(",")[0].strip() for says in list(THESAURUS.values())[:120]]
        queries = ["list the %s" % p for p in phrases]
        lat, hits = [], 0
        for q in queries:
            t = time.perf_counter()
            got = idx.search(q, 10)
            lat.append(time.perf_counter() - t)
            hits += any(idx.names[d].startswith("gh_list_") for d in got[:3])
        lat.sort()
        self.assertLess(lat[len(lat) // 2], 0.05)  # generous: the bench measures well under 2 ms
        self.assertGreater(hits, len(queries) // 2)
        self.assertTrue(search._THES_TOKEN)  # the phrases were read through the thesaurus


class DescribeGroups(RuntimeTest):
    """describe(server) of a big server: groups of names, not one line per function."""

    def setUp(self) -> None:
        super().setUp()
        tools = {"big_%s_%s%d" % (g, v, k): ("big", "%s_%s%d" % (g, v, k), v != "get")
                 for g in ("alpha", "beta", "gamma") for v in ("get", "set") for k in range(12)}
        tools["big_lonely"] = ("big", "lonely", False)
        tools["sm_one"] = ("sm", "one", False)
        catalog = {fn: ["%s()" % fn, "Summary of %s" % fn] for fn in tools}
        loaded = sdk.load_sdk(sdk_source(tools), 2, catalog)
        self.assertTrue(loaded["ok"], loaded)

    def describe(self, name: str) -> str:
        env = self.run_code("result = describe(%r)" % name)
        self.assertTrue(env["ok"], env)
        return env["result"]

    def test_a_big_server_is_listed_by_groups(self) -> None:
        text = self.describe("big")
        self.assertTrue(text.startswith("server big: 73 functions in 4 groups by name"), text)
        self.assertIn("(it ranks by words", text)
        self.assertIn("  big_alpha* (24): get0, get1, get10, get11, …", text)
        self.assertIn("  big_lonely  # Summary of big_lonely", text)
        self.assertNotIn("big_beta_set3(", text)
        group = self.describe("big_beta")
        self.assertIn("big_beta_set3()", group)  # a group lists its functions
        self.assertIn("24 functions", group)

    def test_a_small_server_is_listed_whole(self) -> None:
        self.assertIn("sm_one()", self.describe("sm"))


class Search(RuntimeTest):
    def setUp(self) -> None:
        super().setUp()
        loaded = sdk.load_sdk(sdk_source(PY), 2, CATALOG)
        self.assertTrue(loaded["ok"], loaded)

    def top(self, query: str, n: int = 1) -> list[str]:
        env = self.run_code("result = [r['name'] for r in search_tools(%r, %d)]" % (query, n))
        self.assertTrue(env["ok"], env)
        return env["result"]

    def test_shape_of_results(self) -> None:
        env = self.run_code("result = search_tools('open a bug', limit=3)")
        self.assertTrue(env["ok"], env)
        self.assertLessEqual(len(env["result"]), 3)
        first = env["result"][0]
        self.assertEqual(set(first), {"name", "signature", "summary", "server"})
        self.assertEqual(first["name"], "gh_issues_create")
        self.assertEqual(first["server"], "gh")
        self.assertEqual(first["signature"], "gh_issues_create(owner: str, repo: str)")
        self.assertEqual(first["summary"], "Create an issue")

    def test_synonyms_prefix_and_typos(self) -> None:
        self.assertEqual(self.top("file a ticket"), ["gh_issues_create"])  # bug/ticket -> issue
        self.assertEqual(self.top("remove a repository"), ["gh_repos_delete"])  # remove -> delete
        self.assertEqual(self.top("show all PRs"), ["gh_pulls_list"])  # pr -> pull
        self.assertEqual(self.top("make a new folder"), ["fs_create_directory"])  # folder -> directory
        self.assertEqual(self.top("notif repo issu"), ["gh_issues_list_for_repo"])  # prefixes
        self.assertEqual(self.top("delte a repositry"), ["gh_repos_delete"])  # one typo each
        self.assertEqual(self.top("read text file"), ["fs_readTextFile"])  # camelCase name

    def test_name_words_not_asked_for_rank_lower(self) -> None:
        self.assertEqual(self.top("create an issue", 2), ["gh_issues_create", "gh_issues_create_comment"])

    def test_limit_server_and_bad_input(self) -> None:
        self.assertEqual(self.top("create", 0), [])
        env = self.run_code("result = [r['server'] for r in search_tools('create', 10, server='fs')]")
        self.assertTrue(env["result"] and set(env["result"]) == {"fs"}, env)
        env = self.run_code("search_tools(42)")
        self.assertFalse(env["ok"])
        self.assertIn("query must be a string", env["error"])
        env = self.run_code("result = search_tools('the of and')")  # only stop words
        self.assertEqual(env["result"], [])
        env = self.run_code("import time\nt = time.perf_counter()\nsearch_tools(' '.join('w%d' % i for i in range(200000)))\n"
                            "result = time.perf_counter() - t")
        self.assertTrue(env["ok"], env)
        self.assertLess(env["result"], 5.0)  # a megabyte of query is cut, not searched word by word

    def test_describe_function_server_prefix_and_unknown(self) -> None:
        env = self.run_code("result = describe('gh_repos_delete')")
        self.assertTrue(env["result"].startswith("gh_repos_delete(owner: str, repo: str)\n[write] server gh, tool repos_delete"))
        env = self.run_code("result = describe(gh_repos_delete)")  # the function itself works too
        self.assertIn("tool repos_delete", env["result"])
        env = self.run_code("result = describe('fs')")
        self.assertTrue(env["result"].startswith("server fs: 2 functions"), env["result"])
        self.assertIn("fs_readTextFile(owner: str, repo: str)  # Read a text file from disk", env["result"])
        env = self.run_code("result = describe('gh_issues')")
        self.assertIn("functions starting with 'gh_issues': 3 functions", env["result"])
        env = self.run_code("result = describe('gh_isues_craete')")
        self.assertIn("no such function or server", env["result"])

    def test_help_of_an_sdk_function(self) -> None:
        env = self.run_code("help(gh_pulls_list)")
        self.assertTrue(env["ok"], env)
        self.assertIn("gh_pulls_list(owner: str, repo: str)", env["stdout"])

    def test_unavailable_server_is_explained(self) -> None:
        unavailable = [{"server": "slack", "prefix": "slack", "state": "failed", "error": "exited 1"}]
        env = self.run_code("slack_post_message(text='hi')", validate=True, unavailable=unavailable)
        self.assertFalse(env["ok"])
        self.assertEqual(env["error_kind"], "validation")
        self.assertIn("server slack is configured but failed (exited 1)", env["error"])
        env = self.run_code("result = describe('slack')", unavailable=unavailable)
        self.assertIn("server slack is failed: exited 1", env["result"])
        runner._set_unavailable([])

    def test_servers_still_connecting_are_named(self) -> None:
        unavailable = [{"server": "late", "prefix": "late", "state": "connecting", "error": ""}]
        env = self.run_code("r = search_tools('open a bug')\nresult = [list(r), r.connecting]", unavailable=unavailable)
        self.assertTrue(env["ok"], env)
        self.assertEqual(env["result"][0][0]["name"], "gh_issues_create")
        self.assertEqual(env["result"][1], ["late"])
        self.assertIn("late still connecting", env.get("stderr", ""))
        env = self.run_code("result = search_tools('open a bug')", unavailable=unavailable)
        self.assertEqual(env["result"][0]["name"], "gh_issues_create")  # still a plain list
        env = self.run_code("search_tools('a'); search_tools('b')\nresult = describe('late_echo')", unavailable=unavailable)
        self.assertIn("server late is connecting", env["result"])
        self.assertEqual(env.get("stderr", "").count("still connecting"), 1)  # said once per run
        env = self.run_code("result = search_tools('open a bug', server='gh').connecting", unavailable=unavailable)
        self.assertEqual(env["result"], [])  # another server's search is complete
        runner._set_unavailable([])
        env = self.run_code("result = search_tools('open a bug').connecting")
        self.assertEqual(env["result"], [])
        self.assertNotIn("stderr", env)

    def test_index_built_once_per_snapshot(self) -> None:
        snap = sdk.current()
        idx = discovery.index(snap)
        self.assertIs(idx, discovery.index(snap))  # built once per snapshot



class SemanticSetting(unittest.TestCase):
    """CODEMCP_SEMANTIC_SEARCH is read with the words the gateway's settings accept; off, the
    worker's start (the runtime's imports, the prototype's warm()) and a search load neither
    the encoder nor numpy."""

    def test_off_loads_no_encoder(self) -> None:
        code = ("import sys\nfrom codemcp_rt import discovery, runner, worker_main, validator\n"
                "discovery.warm()\nrunner.run({'run_id': 'r', 'session': 's', 'code': 'search_tools(\"read a file\")'})\n"
                "print([m for m in ('codemcp_rt.encoder', 'codemcp_rt.semantic', 'numpy') if m in sys.modules])")
        env = {k: v for k, v in os.environ.items() if k != "CODEMCP_SEMANTIC_SEARCH"}
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stdout.strip().splitlines()[-1], "[]")

    def test_true_and_false_words(self) -> None:
        kept = os.environ.get("CODEMCP_SEMANTIC_SEARCH")
        try:
            for value, on in [("1", True), ("true", True), ("YES", True), ("on", True), ("0", False),
                              ("no", False), ("off", False), ("", False), ("2", False)]:
                os.environ["CODEMCP_SEMANTIC_SEARCH"] = value
                self.assertEqual(discovery.semantic_enabled(), on, value)
        finally:
            if kept is None:
                os.environ.pop("CODEMCP_SEMANTIC_SEARCH", None)
            else:
                os.environ["CODEMCP_SEMANTIC_SEARCH"] = kept

if __name__ == "__main__":
    unittest.main()
