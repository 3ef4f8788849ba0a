"""thesaurus — everyday words for the verbs and nouns of software APIs (data for search.py).

How it was made: the vocabulary of the catalog search_tools is measured on (GitHub's REST API as
~1,220 functions generated from @octokit/openapi, plus the filesystem/memory/everything test
servers) was walked — every verb that starts a function name (get list delete create set update
remove add check disable enable download request cancel revoke restore review mark start merge
generate re_run redeliver unlock toggle approve star rerequest stop dismiss render assign block
ping compare simulate trigger edit move force reset suspend export publish fork lock pin
reprioritize convert submit accept decline rename replace test transfer upload follow ...) and
the frequent nouns of the names (runner, environment, ruleset, deploy key, autolink, seat,
timeline, interaction restrictions, secret scanning, attestation, codespace, ...). For each, the
ways developers commonly say it in plain English were written down from general knowledge of how
people talk about software (tickets, chat, docs), NOT from any query set: no task of
tests/data/catalog was read to write an entry. The words are generic to software and APIs;
nothing here names a repository, a user or a task. Four entries of general file-storage words
(copy, trash, thumbnail, and the note/group phrases of comment and membership) were added after
reading the misses of tests/data/discovery/dev-files.json (Box), the development set of the
non-GitHub APIs; the blind sets there were never read.

Format: API term (words of the catalog's function names; several words = a compound that the
API names together) -> the everyday words and phrases that mean it, comma-separated. A phrase is
matched on whole words, a word in any inflection (Porter stems), longer phrases first.
search.py reads it through compile_table(); it adds the API term to a query with a weight below
an exact match, so a query that already uses the API's word ranks as before. This file owns the
table, its compiled form and SYNONYM_GROUPS (the API's own synonyms: issue/bug/ticket,
create/open/new/add, ...); it ranks nothing (search.py does).
"""

from __future__ import annotations

import re
from typing import Callable, NamedTuple

# Groups of words that mean the same thing in an API; the first word of a group is its
# canonical term: a member means it strongly (search._SYN_WEIGHT), two members mean each other
# weakly (search._SYN_SIDE); in a group marked "~" (adjectives, loose kin) all of them weakly.
# A word may be in several groups.
SYNONYM_GROUPS: list[str] = [
    "issue bug ticket defect problem incident",
    "create new add make open file post submit start register generate leave publish share put "
    "store save record establish raise compose spawn send",
    "delete remove drop destroy erase rm del discard purge unset forget trash wipe scrap revoke kill "
    "terminate kick expel evict",
    "list all show enumerate every browse index whole entire which",
    "get fetch retrieve read show look see info detail display obtain dump export inspect describe grab "
    "explain",
    "write save store persist",
    "~create connect link attach",
    "~read open load cat view",
    "enable activate",
    "disable deactivate",
    "event activity timeline feed",
    "health ping alive",
    "update edit change modify set patch alter adjust replace close reopen rename fix tweak toggle",
    "repo repository codebase project",
    "authenticated me my mine myself own i",
    "request ask",
    "rate quota throttle limit remaining",  # "left" only after have/has (search._PHRASE_MAP)
    "pull pr",
    "org organization organisation company",
    "user person people member account someone profile colleague somebody human",
    "who people person user member",
    "member belong membership join",
    "star favorite favourite bookmark like stargazer",
    "search find query lookup look locate",
    "comment reply remark discuss discussion conversation",
    "~label tag",
    "workflow action ci pipeline",
    "run execute trigger dispatch rerun",
    "~rerun rerequest retry",
    "secret credential password token",
    "file document content text",
    "directory folder dir",
    "merge combine land",
    "release version",
    "~latest newest recent last current",
    "gist snippet",  # not "paste": its stem is "past" ("over the past year", "past contributors")
    "follow follower",
    "watch subscribe subscription watcher unwatch unsubscribe",
    "team group squad",
    "notification alert inbox",
    "key ssh gpg",
    "webhook hook",
    "move rename mv relocate",
    "entity node",
    "fork copy clone",
    "invite invitation",
    "block ban",
    "collaborator contributor maintainer",
    "artifact output build",
    "log logs output",
    "commit revision history",
    "compare diff difference between",
    "assignee assign delegate",
    "reaction emoji react",
    "milestone deadline",
    "archive zip tarball download",
    "environment env variable",
    "sum add total plus",
    "echo repeat say parrot",
    "cancel stop abort halt kill terminate",
    "approve accept approval",
    "review approve",
    "reject deny decline",
    "lock freeze",
    "unlock unfreeze",
    "vulnerability security advisory",
    "dependabot dependency",
    "codespace devcontainer",
    "package registry",
    "deployment deploy",
    "check test status",
    "status green red pass fail passing failing state",
    "observation fact note",
    "relation relationship link connect",
    "graph knowledge know memory",
    "memory remember recall memorize",
    "image picture photo png jpg icon",
    "tree structure hierarchy nested recursive",
    "multiple many several batch bulk",
    "allowed permitted accessible access permission",
    "info size metadata modified stat timestamp big large bytes",
    "long slow lengthy progress",
    "view visitor visit traffic",
    "count number",
    # software abbreviations and near-words (general, not from any query set)
    "configuration config cfg conf",
    "~setting configuration preference option",
    "permission perm perms",
    "documentation docs doc",
    "administrator admin",
    "dependency dep deps",
    "vulnerability vuln vulns cve",
    "package pkg",
    "description desc",
    "statistic stats stat metric insight analytics",
    "message msg",
    "~commit sha hash",
    "~ref reference branch",
    "project proj",
    "credential creds",
    "database db",
    "identifier id",
    "variable var vars",
    "password pw passwd",
    "account acct",
    "~app bot integration",
    "~add give grant",
]

THESAURUS: dict[str, str] = {
    # -- verbs that start function names ------------------------------------------------------
    "disable": "switch off, shut off, pause, put on hold, stop running, stop it from running, "
               "deactivate, opt out, not allowed anymore, kill switch, suspend running, no longer run",
    "enable": "switch on, unpause, resume, re enable, opt in, start using, allow again, "
              "bring back online",
    "redeliver": "resend, send again, deliver again, replay, retry delivery, retransmit, redo delivery, "
                 "fire again, push again",
    "re run": "retry, run again, restart, rebuild, kick again, try again, redo, run once more, rerun, "
              "retrigger, rekick",
    "rerequest": "retrigger, re trigger, rerun check, retry check, run the check again, request again",
    "transfer": "move ownership, change owner, change ownership, give away, hand off, reassign ownership, "
                "move to another org, move to another account, new owner",
    "dismiss": "throw out, invalidate, overrule, set aside, wave off, waive, discard review, "
               "mark as not an issue, false positive, won't fix, ignore alert",
    "revoke": "invalidate, withdraw, take away, rescind, deauthorize, kill token, pull access, "
              "cut off access, void",
    "restore": "undelete, bring back, recover, undo delete, resurrect, put back",
    "suspend": "put on ice, temporarily block, temporarily disable",
    "unsuspend": "reinstate, unfreeze, thaw, lift suspension",
    "lock": "freeze conversation, close to comments, stop comments, no more comments, lock down, "
            "too heated, shut the discussion",
    "unlock": "reopen discussion, allow comments again, unfreeze conversation",
    "pin": "stick to top, keep at top, highlight, showcase",
    "unpin": "unstick, unfeature, stop highlighting, take off the top",
    "mark read": "acknowledge, seen, clear notifications, mark seen, mark as seen, dismiss notifications, "
                 "catch up on notifications",
    "mark done": "finished with, archive notification",
    "ping": "poke, send a test, test hook, test event, health check, are you there",
    "test": "try out, check it works, sanity check, verify works",
    "simulate": "dry run, what would happen, rehearse, try without applying",
    "render": "to html, convert markdown, show as html, markdown to html",
    "approve": "sign off, lgtm, looks good, green light, go ahead, give approval, let it run, "
               "allow to run",
    "decline": "turn down, refuse, say no, reject",
    "accept": "agree, say yes, confirm invite",
    "submit": "send off, finish review, post review, hand in, file the review",
    "merge": "land, squash, fold in",
    "merge upstream": "sync fork, sync with upstream, catch up with upstream, pull in upstream changes, "
                      "update from upstream, bring fork up to date, upstream changes",
    "update branch": "bring up to date, rebase, catch up with base, sync with main, sync with base, "
                     "pull in latest main, update with base",
    "archive": "mothball, retire, make read only, read only, shelve, sunset, deprecate",
    "block": "ban, mute user, shut out, stop someone",
    "unblock": "unban, lift ban, unmute, let back",
    "assign": "hand to, make responsible, responsible for",
    "unassign": "drop from, no longer responsible",
    "request reviewer": "ask for review, ask to review, get a review, want a review, tag a reviewer, "
                        "review request, review from, needs review",
    "reprioritize": "reorder, move up, move down, change priority, prioritize, rearrange, bump up",
    "convert": "turn into, change into, make it a",
    "replace": "overwrite, swap, set all, replace all, redo all",
    "upload": "attach file, add binary, put file, push file, attach binary, add asset",
    "download": "save locally, pull down, save a copy, grab, get the zip, get the tarball",
    "export": "dump, backup, back up, extract",
    "generate": "auto write, write up, compose automatically, autogenerate",
    "reset": "regenerate, rotate, refresh, renew, reissue, cycle",
    "scope": "narrow down, restrict to, limit to fewer, downscope",
    "check": "whether, verify, confirm, find out whether, test if, see if",
    "force cancel": "force stop, hard stop, kill it now, forcefully, stuck run, won't cancel",
    "dispatch": "fire, launch, run manually, manual run, on demand, start manually",
    "toggle": "flip",
    "publish": "go live, make public, announce, put out",
    "star": "like, favorite, favourite, bookmark, upvote",
    "unstar": "unlike, unfavorite, unfavourite, remove bookmark",
    "follow": "keep up with, subscribe to user",
    "unfollow": "stop following, no longer follow",
    "rename": "call it, new name, change the name",
    "unstack": "break apart, split the stack, break up the stack, flatten",
    "compare": "what changed between, diff between, difference between, ahead behind, behind by, "
               "how far ahead",
    "fork": "copy the repo, own copy, make a copy, duplicate repo, downstream copies",
    # -- nouns of function names ----------------------------------------------------------------
    "runner": "build machine, build agent, build server, ci machine, ci agent, ci box, worker machine, "
              "executor, build host, machine that runs jobs, self hosted machine",
    "runner group": "machine pool, runner pool, pool of machines, fleet",
    "self hosted": "on prem, on premises, own servers, our hardware, own infrastructure, our own machines",
    "hosted runner": "cloud machine, larger runner, github managed machine",
    "jitconfig": "just in time, ephemeral runner, one time runner, single use runner, throwaway runner",
    "registration token": "token to register, join token, register a machine",
    "environment": "staging, production, prod, deploy target, qa, stage, preprod, sandbox",
    "deployment": "rollout, roll out, release to prod, ship to production, deploy",
    "protection rule": "deploy gate, approval gate, wait timer, manual approval, required approval",
    "pending deployment": "waiting for approval, awaiting approval, blocked deploy, held deploy",
    "ruleset": "branch rules, rules, policies, guardrails, push rules, branch policy, protection rules, "
               "tag rules, rule set",
    "rule suite": "rule evaluations, rule insights, rule results, rule checks, what the rules blocked",
    "bypass": "exemption, override, skip the rules, get around, allowlist",
    "branch protection": "protect the branch, protected branch, required reviews, require approvals, "
                         "no force push, force push, no direct push, lock the branch",
    "status check": "required checks, must pass, required ci, gate merges, checks required",
    "commit signature protection": "require signed commits, signed commits, verified commits, "
                                   "signature required, require signing",
    "deploy key": "read only key, machine key, deployment key, server key, repo ssh key, key for a server, "
                  "ci key, access key for a server",
    "autolink": "link reference, auto link, jira link, ticket link, link pattern, external tracker, "
                "issue tracker link, jira, linear ticket, turn references into links",
    "secret scanning": "leaked credentials, leaked secrets, exposed tokens, committed passwords, "
                       "credential leak, exposed secret, leaked keys, hardcoded passwords",
    "push protection": "block secrets on push, stop pushes with secrets",
    "custom pattern": "custom regex, custom detector, own regex, regex pattern",
    "code scanning": "static analysis, sast, lint findings, code alerts, security scan, scanner, "
                     "code vulnerabilities, scan results",
    "dependabot": "outdated dependencies, vulnerable packages, dependency updates, version bumps, "
                  "dependency alerts, vulnerable dependencies, bump prs",
    "sbom": "bill of materials, software inventory, dependency inventory, license inventory, spdx",
    "dependency graph": "dependency tree, what we depend on, what it depends on, dependencies list",
    "dependency snapshot": "submit dependencies, report dependencies, upload dependencies",
    "advisory": "cve, security bulletin, vulnerability report, disclosure, ghsa, security notice",
    "vulnerability alert": "security warnings, security alerts, vulnerable",
    "automated security fix": "auto fix, automatic fix, security updates, automatic security prs, "
                              "auto patch",
    "private vulnerability reporting": "report a vulnerability privately, responsible disclosure, "
                                       "security reports, report security issues privately",
    "interaction restriction": "limit interactions, cooldown, cool down, cooling off, temporary block, "
                               "restrict who can comment, slow down, only collaborators can comment, "
                               "too heated, brigading, spam wave, raid, calm things down",
    "seat": "copilot license, copilot licence, license for copilot, user license, billing seat, "
            "assigned users, who has access to copilot, copilot users, who has copilot",
    "copilot": "ai assistant, ai pair programmer, code completion, autocomplete, ai completion",
    "metrics": "adoption, usage stats, usage numbers, engagement",
    "billing": "cost, costs, spend, spending, invoice, charges, how much we pay, bill, paying",
    "budget": "spending limit, spending cap, cost cap, cost limit, max spend",
    "usage": "consumption, minutes used, how much used, used up, utilisation, utilization",
    "cache": "cached files, build cache, cache entries, cached dependencies",
    "artifact": "build output, build result, compiled output, produced files",
    "retention": "how long kept, keep for, expiry, expire after, auto delete after, kept for, days kept",
    "concurrency group": "parallel runs, queued runs, simultaneous",
    "oidc sub claim": "openid, federated identity, cloud auth, jwt subject, token claim, federated",
    "workflow permission": "github token permissions, default token permissions, token permissions",
    "allowed action": "which actions can run, third party actions, marketplace actions, approved actions",
    "fork pr contributor approval": "outside contributor prs, first time contributor, prs from forks",
    "attestation": "provenance, signed build, build provenance, slsa, supply chain proof",
    "timeline": "history, what happened, everything that happened, chronology, audit trail, "
                "log of events, full history",
    "event": "activity, happenings, what happened, audit, actions taken",
    "received event": "my feed, news feed, dashboard, what people i follow did",
    "feed": "atom, rss",
    "view": "page views, visitors, visits, hits, popularity, traffic",
    "clone": "clones, git clones, times cloned, checkouts",
    "referrer": "who links to us, where traffic comes from, traffic sources, referring sites",
    "top path": "most visited pages, popular content, most viewed",
    "participation": "weekly commit counts, commit activity per week, owner vs everyone",
    "punch card": "busiest hours, what time people commit, hour of the day, day of the week",
    "code frequency": "lines added, lines deleted, additions and deletions, churn, code churn",
    "contributor stats": "who contributes the most, top contributors, leaderboard, most active",
    "community profile": "health files, community health, community standards, contributing guide",
    "code conduct": "behavior guidelines, community rules, conduct",
    "license": "licence, legal terms, copyright, open source license",
    "gitignore": "ignore file, ignored files, ignore template, files to ignore",
    "emoji": "emojis, smiley, smileys, emoticons",
    "meta": "ip addresses, ip ranges, github ips, ip allowlist, firewall",
    "zen": "wisdom, quote, aphorism, proverb, saying of the day",
    "octocat": "ascii art, mascot",
    "rate limit": "quota, how many calls left, api budget, requests left, throttled",
    "pages": "website, static site, docs site, github io, homepage, web hosting, project site",
    "pages build": "rebuild the site, site build, republish the site",
    "health check": "dns, domain check, custom domain, https certificate, domain",
    "asset": "binary, release file, download file, uploaded file",
    "release notes": "changelog, change log, what's new, whats new",
    "topic": "keywords, categories, hashtags, tags for the repo",
    "language": "tech stack, written in, programming language",
    "readme": "intro doc, front page, project description, landing doc",
    "blob": "raw file content, binary object, raw bytes, file object",
    "ref": "pointer, branch pointer, head, refs, branch",
    "annotation": "warnings, lint errors, inline errors, error lines",
    "check run": "ci result, test result, build status, ci check, test run",
    "combined status": "overall status, overall state, all statuses",
    "outside collaborator": "external contributor, contractor, guest, non member, outsider, freelancer",
    "role": "permission level, access level",
    "security manager": "security team, security champion, security lead",
    "child team": "sub team, subteam, nested team, team inside",
    "personal access token": "pat, fine grained token, classic token, developer token",
    "pat grant": "approved tokens, token access, token approvals",
    "pat grant request": "pending token approvals, token requests, token access requests",
    "installation": "integration, bot install, installed apps, plugin, add on, installed",
    "installation access token": "app token, bot token, temporary token, short lived token",
    "plan": "pricing plan, tier, subscription plan, paid plan, pricing",
    "marketplace": "app store, store listing, purchase, buyers",
    "codespace": "cloud dev environment, online ide, dev box, remote dev environment, cloud workspace, "
                 "vscode in the browser, cloud ide",
    "machine": "vm size, machine type, hardware, instance type, cpu",
    "devcontainer": "dev container, container config",
    "migration": "import repo, move from, bring over, moving repositories, data export",
    "package": "docker image, container image, npm package, maven, nuget, gem, library",
    "package version": "old versions, image tags, published versions",
    "project": "board, kanban, project board, roadmap, tracker, backlog, sprint board",
    "item": "card, row, ticket on the board",
    "field": "column, custom field, attribute",
    "sub issue": "child issue, subtask, sub task, checklist item, parent issue, epic, breakdown",
    "issue type": "kind of issue, issue category, bug vs feature",
    "blocked blocking": "depends on, waiting on, blocker, blocking",
    "review comment": "inline comment, line comment, code comment, comment on a line, diff comment, "
                      "comment on the code",
    "requested reviewer": "who needs to review, pending reviewers, review requests, waiting for review",
    "pending review": "draft review, unsubmitted review, review in progress",
    "pull request stack": "stacked prs, stack of prs, chain of prs, dependent prs, stacked",
    "hash algorithm": "sha1, sha256, object format",
    "custom property": "metadata, attributes, classification, key value, repo attributes",
    "immutable release": "tamper proof, cannot be changed, frozen release, locked release, unchangeable",
    "private": "hidden, visibility, not public",
    "social account": "twitter, linkedin, mastodon, social links, social media, profile links, bluesky",
    "email visibility": "hide email, email private, show email",
    "context": "hover card, profile card, user context",
    "api insights": "api usage, api traffic, api calls, api requests, call stats",
    "route": "routes, most called",
    "actor": "caller, who made calls",
    "campaign": "security campaign, remediation, fix drive, cleanup push",
    "classroom": "students, teacher, course, school",
    "grade": "grades, score",
    "code security configuration": "security preset, security defaults, security settings, security policy",
    "private registry": "package registry credentials, artifactory, private feed, internal registry",
    "network configuration": "vnet, private networking, azure network, network settings",
    "agent task": "coding agent, ai agent, ask copilot, delegate to copilot, background agent",
    "space": "knowledge base, context space",
    "sarif": "scan results upload, analysis upload, static analysis report",
    "autofix": "ai fix, suggested fix, suggest fix",
    "variant analysis": "multi repo query, query across repos, mrva",
    "alert": "warnings, flagged",
    "delivery": "past deliveries, delivery attempts, payloads sent, failed webhook calls, sent payloads",
    "webhook config": "webhook url, payload url, hook url, content type",
    "template": "boilerplate, scaffold, starter, cookiecutter, skeleton",
    "dispatch event": "custom event, external trigger, fire an event, send an event",
    "workflow dispatch": "run manually, manual run, trigger workflow, start workflow",
    "job": "steps, build job, build step",
    "attempt": "retry number, previous try, earlier try, try number",
    "public key": "encryption key, key to encrypt, sealed box",
    "variable": "config value, config values, env var, env vars, setting value",
    "secret": "api key, credential, password, private value, sensitive value",
    "failed invitation": "bounced invites, invites that did not work, failed invites, broken invites",
    "activity": "push history, who pushed, force push history",
    "pull request associated commit": "which pr introduced, pr for a commit, pr that added",
    "webhook": "callback, callback url, http callback, notify my server, event subscription",
    "collaborator": "people with access, who has access, contributor access",
    "enterprise": "whole company, corporate account, all orgs, every org",
    "member": "staff, employees, people in, belong to",
    "team": "squad, group of people, department",
    "milestone": "deadline, target date, sprint, goal",
    "label": "category, marker",
    "assignee": "responsible person, who is on it, assigned to",
    "reaction": "emoji reaction, thumbs up, heart, upvote",
    "comment": "remark, reply, leave a note, add a note",
    "commit": "revision, changeset, checkin",
    "branch": "line of work, feature branch",
    "tag": "version tag, git tag",
    "release": "version, ship a version",
    "gist": "snippet, pastebin",
    "copy": "duplicate, make a copy",
    "trash": "recycle bin, deleted items, wastebasket",
    "thumbnail": "preview picture, preview image, small preview",
    "notification": "inbox, unread",
    "subscription": "watching, watch settings, notification settings",
    "stargazer": "people who starred, fans",
    "watcher": "people watching, subscribers",
    "follower": "fans, audience",
    "email": "mail, e mail, email address, mail address",
    "ssh key": "public key, ssh",
    "gpg key": "signing key, pgp, gpg",
    "signing key": "key to sign commits, ssh signing",
    "organization role": "custom role, org role",
    "security advisory": "vulnerability disclosure, advisory draft",
    "check suite": "all checks, ci suite, checks for a commit",
    "status": "build badge, green check, red x, ci state",
    "tree": "directory listing, file listing, whole layout",
    "content": "file contents, source file, text of the file",
    "log": "output, console output, build log",
    "storage": "disk space, space used",
    "limit": "cap, maximum, ceiling",
    # -- second walk: the name words the first left out (by frequency in names) ---------------
    "default": "standard, out of the box, fallback, preset, baseline",
    "policy": "guideline, guidelines, governance",
    "day": "daily, per day, each day",
    "thread": "discussion thread, notification thread",
    "summary": "overview, at a glance, breakdown, rollup",
    "content exclusion": "ignore paths, exclude files, hide files from copilot, excluded files",
    "property definition": "schema, allowed values",
    "default setup": "turn on codeql, configure scanning, scanning setup, enable scanning",
    "creation": "who can create, allow creating",
    "import": "bring in, pull in from, migrate from",
    "time": "over time, time series, per hour, trend",
    "author": "writer, who wrote, committer",
    "level": "degree, tier",
    "suggestion": "proposal, recommended change, suggested change",
    "conflict": "merge conflict, clash, collide, collision",
    "root": "mount, mounts, top level, base folder",
    "premium": "paid requests, premium requests, extra requests",
    "markdown": "md, rich text, formatted text",
    "digest": "sha256 digest, checksum, fingerprint",
    "draft": "wip, work in progress, not ready, not ready for review",
    "async": "in the background, background, non blocking",
    "global": "everywhere, github wide, public database, across github",
    "gzip": "compress, compressed, gz",
    "media": "image file, audio, video, picture file",
    "platform": "operating system",
    "analysis": "scan result, analyses",
    "raw": "unformatted, verbatim",
    "error": "errors, invalid, broken, mistakes",
    "codeowners": "code owners, owners file, who owns which files, ownership rules",
    "username": "login, user name, screen name",
    "primary": "main one, default one",
    "start": "spin up, boot, power on, fire up, bring up",
    "stop": "shut down, power off, spin down, halt",
    "workflow run": "ci run, pipeline run, ci build, build run",
    "permission": "privileges, access rights, who can do what, allowed to",
    "token": "access token, auth token, bearer token, api token",
    "authorization": "oauth grant, app authorization, authorized apps",
    "image": "os image, machine image, base image, vm image",
    "pending": "awaiting, outstanding, not yet accepted, unanswered",
    "failed": "broken, crashed, flaky",
    "following": "people i follow, who i follow",
    "admin": "enforce for admins, include administrators, owners too",
    "resource link": "links to resources, resource urls",
    "annotated message": "message with annotations, priority message",
    "structured content": "structured output, typed output, json output",
    "long running operation": "long task, slow task, with progress, progress updates",
    "research query": "research task, deep research",
    "simulated logging": "log messages, fake logs, logging on",
    "subscriber update": "resource updates, update notifications",
    "tiny image": "small image, little picture, sample image",
    "multiple files": "several files, many files, batch of files, a few files",
    "directory sizes": "folder sizes, how big are the files, file sizes, disk usage",
    "allowed directory": "which folders can, accessible folders, permitted folders, sandbox folders",
    "media file": "image file, audio file, picture file, binary file",
    "entity": "concept, person in memory",
    "observation": "fact, note about, detail about",
    "relation": "relationship, link between, connection between",
    "node": "entity node, graph node",
    # -- third walk: compounds of two name words ------------------------------------------------
    "thread subscription": "mute, mute the thread, ignore thread, unsubscribe from thread, stop notifications",
    "access restriction": "who can push, push access, limit who can push, restrict pushes, push allowance",
    "review protection": "required approvals, required reviewers, number of approvals, dismiss stale reviews, "
                         "code owner reviews, approvals required",
    "runner application": "runner binary, runner download, download the runner, agent binary, runner package",
    "remove token": "token to remove a runner, deregister a runner, unregister",
    "stargazer count": "how many stars, star count, number of stars",
    "installation request": "requests to install, install requests, pending installs",
    "org membership": "my membership, membership status, am i a member",
    "artifact retention": "how long artifacts are kept, artifact expiry, keep artifacts",
    "cache usage": "cache size, how big is the cache, space used by caches",
    "workflow usage": "billable minutes, billable time, how long it ran, runtime, duration",
    "commit activity": "commits per week, weekly commits, commit graph",
    # -- fourth walk: functions none of whose name words had an entry yet -----------------------
    "git": "low level, raw git, git object, git objects, plumbing, object database",
    "parent": "parent issue, which issue is this under, the epic it belongs to, belongs under",
    "manifest": "app manifest, app from a config, app from config",
    "slug": "short name, url name, url friendly name",
    "pre flight": "preflight, before creating, check before creating",
    "fine grained permission": "granular permissions, fine grained permissions, detailed permissions",
    "matching ref": "refs starting with, refs matching, refs with prefix, branches starting with",
    # -- fifth walk: the API's areas (first words of names) not covered yet ---------------------
    "code quality": "code smells, maintainability, tech debt, code health, lint issues, quality issues",
    "credential revoke": "revoke leaked tokens, kill leaked tokens, invalidate leaked credentials",
    "copilot space": "knowledge space, shared context for copilot, copilot context, copilot knowledge",
    "enterprise team": "company wide team, cross org team, team across orgs",
    "api root": "list of endpoints, entry point, api index, discover the api",
    "dependency diff": "dependency changes, what dependencies changed, new dependencies",
}

# A second, independent walk (by a helper who had seen no task set's misses): for every function
# of the GitHub catalog by area (actions, repos, issues, orgs, teams, security features,
# codespaces, copilot, packages, billing, apps, checks, git, gists, users, activity, search), how
# a developer says it in chat without the API's words. Kept apart so each walk reads on its own;
# a term both walks name gets both lists. Same rules: no phrase names a task of any set, a
# single word that the catalog already uses in more than a few functions is left out.
_SECOND_WALK: dict[str, str] = {
    "workflow": "build pipeline, ci pipeline, ci config, yaml pipeline, github action",
    "cancel": "abort the run, kill the build, stop the build, stop the run, call off",
    "log": "what it printed, stdout, stderr, trace output, build output",
    "artifact": "binaries from ci, ci outputs, output of the build",
    "secret": "stored credentials, encrypted value, sensitive setting",
    "runner": "build box, ci worker, agent machine",
    "retention": "ttl, cleanup policy, purge after, time to live",
    "machine spec": "cpu and ram, how many cores, hardware sizes, vm sizes",
    "collaborator": "who can push, write access, people who can commit, add someone to the repo, "
                    "give someone access, grant access to the repo, repo members",
    "permission level": "what access does, can they write, admin or write, access they have, their role on",
    "tarball archive": "tar gz, tgz, source snapshot",
    "zipball archive": "source zip, zip of the code, zip of the repo, download the source",
    "content": "what's in the file, raw file, cat the file, read a file from, source code of",
    "contributor": "people who committed, who worked on, authors of",
    "commit status": "pass or fail, green or red, mark the build",
    "latest release": "newest version, current version, most recent version, last version shipped",
    "release": "cut a version, tag a version, version bump, ship it",
    "release asset": "downloadable binary, attached binary",
    "branch protection": "stop force pushes, require a pr before merging, nobody can push to main, "
                         "guard main",
    "merge": "ship the pr, get it in, integrate the change",
    "pull request": "mr, patch set, patchset, code change proposal",
    "review": "feedback on the code, critique",
    "files": "what the pr touched, touched paths, diffstat, changed paths",
    "pages site": "docs website, publish the docs",
    "deployment": "release history, what is live",
    "environment": "uat, live site, dev stage, test stage",
    "webhook": "notify url, post to my server, event notification url, integration url",
    "topic": "repo tags, subject tags",
    "lock": "flame war, heated thread, stop the arguing, argument in the comments, toxic thread, "
            "shut the thread",
    "label": "triage tag, categorise, categorize, colour tag, color tag",
    "milestone": "release target, due date, version target, target release",
    "assignee": "owner of the ticket, who is working on, who picked up",
    "assign": "give it to, put someone on, hand over to, pick up the ticket, take the ticket",
    "member": "people in the org, who is in the org, headcount, roster, staff list, org people",
    "remove member": "kick out, offboard, offboarding, boot from, leaver, left the company",
    "invitation": "onboard, onboarding, new hire, new joiner, welcome aboard",
    "ruleset history": "who changed the rules, rule changes over time, previous versions of the rules",
    "artifact deployment record": "what runs where",
    "cluster deployment": "kubernetes, k8s",
    "security product": "ghas",
    "repo permission": "give the team access, grant the team, team access to",
    "membership": "join the group, part of the group, put in the group, add to the group",
    "dependabot": "bump deps bot, dependency bot, renovate, dependency upgrade bot, "
                  "bot that bumps dependencies, outdated packages, security bumps",
    "automated security fix": "bump deps bot",
    "vulnerability alert": "insecure dependencies",
    "secret scanning": "api key in code, password in the repo, token committed, credentials in git, "
                       "leaked api key",
    "code scanning": "sast findings, static checks",
    "update alert": "false alarm, not exploitable, acceptable risk, used in tests, close as fixed",
    "push protection bypass": "let the secret through, allow the secret, override the block",
    "location": "where the secret was found, which file leaked, where it leaked",
    "codespace": "gitpod, browser ide, remote workspace, cloud vm for coding, web editor",
    "copilot": "ai coding assistant, ai helper, ai suggestions, ghcp",
    "cancel seat assignment": "take away the license, unassign license, free up a license, stop paying for",
    "coding agent": "ai developer, ai that opens prs",
    "ai credit": "llm spend, model usage cost, model costs",
    "package": "container registry, docker registry, npm module",
    "billing": "money, dollars, expenses, what we're charged",
    "budget": "spending alert, cost ceiling, spend limit",
    "usage report": "cost breakdown",
    "app": "bot account",
    "check": "still valid, is it valid",
    "account for plan": "who bought, customers of the app, who purchased, paying customers",
    "check run": "ci job result, test outcome, lint result, post test results, report ci results, "
                 "publish test results",
    "suite preference": "auto trigger checks",
    "update ref": "force move branch, move the branch pointer, reset branch to, point the branch at",
    "gist": "code snippet, snippet sharing, share a snippet, quick share of code",
    "authenticated": "logged in, current user, signed in, my own account",
    "get authenticated": "who am i, whoami, my profile, my own user, who i am logged in as, my username, "
                         "my login, my handle",
    "notification": "pings, what i missed",
    "subscription": "get notified about, stop watching",
    "public event": "firehose, global activity, everything happening on github",
    "search code": "grep, grep across repos, find usages, where is this function used",
    "search repo": "find projects, look for a library",
    "search user": "find a person, look up a developer, find people",
    "rate limit": "remaining calls, calls remaining",
    "meta": "webhook ips, actions ips, allowlist github",
    "code conduct": "coc",
    "interaction restriction": "heated argument, trolls, spam attack, drive by comments",
    "pull request creation cap": "limit new prs, too many prs, pr spam, throttle prs",
    "migration": "move off bitbucket, from gitlab, from svn, import from another host, source import",
    "large file": "binary blobs, huge blobs, binaries over 100mb",
    "project": "task board, planning board, scrum board",
    "view": "layout",
    "draft item": "note card, quick note on the board, placeholder card",
    "oidc": "openid connect, workload identity, aws role, cloud credentials without secrets",
    "file info": "last modified, modification time, when was it changed",
    "edit file": "find and replace, change lines",
    "custom image": "golden vm, prebuilt vm, baked vm",
    "pending deployment": "waiting on me to approve, release waiting for sign off, waiting for my sign off",
    "deployment status": "did the rollout succeed, rollout result, rollout state, is it live yet",
    "deployment branch policy": "which branches may ship to prod, ship only from main",
    "issue field": "extra field on tickets, ticket metadata",
    # second walk, generic verbs and a few areas the first pass of this walk left thin
    "selected": "only certain, just these, limit to some, pick which, handful of",
    "custom label": "runner tags, machine tags, runs on",
    "commit": "git log, what was pushed, recent changes",
    "delete": "get rid of, blow away, tear down, throw away, nuke",
    "create": "set up a new, stand up a, spin up a new",
    "remove": "take off, take out, strip off",
    "add": "put on, tack on, slap on",
    "deployment protection rule": "custom gate, external approval, approval app",
    "license": "what terms, mit or apache",
    "item": "put on the board, track on the board",
    "reaction": "plus one, react with, heart it, rocket emoji, party emoji",
    "render": "how will it look, format as html",
    "create directory": "mkdir, make a folder, new folder",
    "list directory": "ls, what's in the folder",
    "write": "save to disk, persist to disk",
    "search": "glob",
}
for _term, _says in _SECOND_WALK.items():
    THESAURUS[_term] = THESAURUS[_term] + ", " + _says if _term in THESAURUS else _says

MAX_WORDS = 6  # a longer phrase is not kept
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_ALPHA = "bcdfghjklmnpqrtvwxz"  # tokens are consonants only: Porter leaves them alone


class Table(NamedTuple):
    phrases: dict[str, list[tuple[tuple[str, ...], int]]]  # first stem -> [(stems, term no.)]
    terms: list[list[dict[str, float]]]  # term no. -> per word of the term {index stem: weight}
    toks: list[str]  # term no. -> its tokens, space-separated
    token: dict[str, dict[str, float]]  # token -> {index stem: weight}
    verb: dict[str, str]  # token -> "r"/"w" when the term's first word is a verb of the catalog


def _stems(stem: Callable[[str], str], text: str) -> tuple[str, ...]:
    return tuple(stem(w.replace("'", "")) for w in _WORD.findall(text.lower()))


def _token(n: int) -> str:
    out = "zq"
    while True:
        out += _ALPHA[n % len(_ALPHA)]
        n //= len(_ALPHA)
        if not n:
            return out + "x"


def _inflection(a: str, b: str) -> bool:
    """Whether two stems are one word's forms (assign/assigne, deploy/deploi), not two words
    (rule/ruleset)."""
    if a == b:
        return True
    short, long_ = sorted((a, b), key=len)
    return len(short) >= 4 and len(long_) - len(short) <= 2 and long_.startswith(short[:-1])


def compile_table(stem: Callable[[str], str], word_weight: float, phrase_weight: float,
                  verb_kind: Callable[[str], str]) -> Table:
    """THESAURUS as lookup tables: every everyday phrase by its first stem, the weighted stems
    of its API terms per word position, and one token (a word no catalog has) per position."""
    by_phrase: dict[tuple[str, ...], list[list[str]]] = {}
    for term, says in THESAURUS.items():
        tstems = [s for s in _stems(stem, term) if s]
        for say in says.split(","):
            ps = _stems(stem, say)
            # a phrase that already says one of the term's words in some inflection ("assigned
            # to" for assignee) is the API's own vocabulary: the exact match covers it
            if ps and len(ps) <= MAX_WORDS and not any(_inflection(p, t) for p in ps for t in tstems):
                by_phrase.setdefault(ps, []).append(tstems)
    table = Table({}, [], [], {}, {})
    for ps, terms in by_phrase.items():
        pos: list[dict[str, float]] = [{} for _ in range(max(len(t) for t in terms))]
        for t in terms:
            for k, w in enumerate(t):
                pos[k][w] = word_weight if len(ps) == 1 else phrase_weight
        toks = []
        for k, d in enumerate(pos):
            tok = _token(len(table.token))
            table.token[tok] = d
            toks.append(tok)
            kinds = {verb_kind(w) for w in d} if k == 0 else set()
            if kinds - {""}:
                table.verb[tok] = "w" if "w" in kinds else "r"
        table.phrases.setdefault(ps[0], []).append((ps, len(table.terms)))
        table.terms.append(pos)
        table.toks.append(" ".join(toks))
    for lst in table.phrases.values():
        lst.sort(key=lambda e: -len(e[0]))  # longer phrases first
    return table


__all__ = ["SYNONYM_GROUPS", "THESAURUS", "Table", "compile_table"]
