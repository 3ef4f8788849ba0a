# One-off writer of the valid corpus (kept for review; the .py files are the corpus).
# Each program runs against the real servers; `# result:` is the value it must return.
import json, os
V = {}
def v(name, why, code, result):
    V[name] = (why, code, result)

# -- async, as models write it
v("a01_top_level_await", "Top-level await on an SDK call.", "r = await everything_echo(message='hi')\nresult = r", "Echo: hi")
v("a02_await_last_expression", "The last expression awaited.", "await everything_get_sum(a=2, b=3)", "The sum of 2 and 3 is 5.")
v("a03_gather_pendings", "asyncio.gather of Pendings at top level.",
  "import asyncio\nrs = await asyncio.gather(everything_echo(message='a'), everything_echo(message='b'))\nresult = list(rs)", ["Echo: a", "Echo: b"])
v("a04_asyncio_run_main", "asyncio.run(main()) with await on SDK calls.",
  "import asyncio\nasync def main():\n    a = await everything_get_sum(a=1, b=1)\n    return a\nresult = asyncio.run(main())", "The sum of 1 and 1 is 2.")
v("a05_async_helpers_gather", "async def helpers gathered.",
  "import asyncio\nasync def shout(m):\n    r = await everything_echo(message=m)\n    return r.upper()\nasync def main():\n    return await asyncio.gather(*(shout(m) for m in ['x', 'y', 'z']))\nresult = asyncio.run(main())",
  ["ECHO: X", "ECHO: Y", "ECHO: Z"])
v("a06_await_in_comprehension", "await inside an async comprehension.",
  "import asyncio\nasync def main():\n    return [await everything_echo(message=str(i)) for i in range(3)]\nresult = asyncio.run(main())",
  ["Echo: 0", "Echo: 1", "Echo: 2"])
v("a07_top_level_gather_helpers", "Top-level await of helpers.",
  "import asyncio\nasync def total(a, b):\n    s = await everything_get_sum(a=a, b=b)\n    return int(s.rsplit(' ', 1)[1].rstrip('.'))\nvals = await asyncio.gather(*[total(i, i) for i in range(4)])\nresult = sum(vals)", 12)
v("a08_await_structured", "Await a structured result and read it.",
  "w = await everything_get_structured_content(location='Chicago')\nresult = sorted(w.keys())", ["conditions", "humidity", "temperature"])
v("a09_wait_for", "asyncio.wait_for around an SDK call.",
  "import asyncio\nasync def main():\n    return await asyncio.wait_for(everything_echo(message='t'), timeout=10)\nresult = asyncio.run(main())", "Echo: t")
v("a10_create_task", "Tasks created explicitly.",
  "import asyncio\nasync def main():\n    t1 = asyncio.create_task(everything_echo(message='1'))\n    t2 = asyncio.ensure_future(everything_echo(message='2'))\n    return [await t1, await t2]\nresult = asyncio.run(main())",
  ["Echo: 1", "Echo: 2"])
v("a11_async_memory_roundtrip", "Async write then read of memory.",
  "import asyncio\nasync def main():\n    await memory_create_entities(entities=[{'name': 'v_async', 'entityType': 'probe', 'observations': ['one']}])\n    g = await memory_open_nodes(names=['v_async'])\n    return [(e['name'], e['observations']) for e in g['entities']]\nresult = asyncio.run(main())",
  [["v_async", ["one"]]])
v("a12_gather_return_exceptions", "gather with return_exceptions.",
  "import asyncio\nasync def main():\n    rs = await asyncio.gather(everything_echo(message='ok'), return_exceptions=True)\n    return rs\nresult = asyncio.run(main())", ["Echo: ok"])
v("a13_sleep_and_await", "asyncio.sleep next to SDK calls.",
  "import asyncio\nasync def main():\n    p = everything_echo(message='later')\n    await asyncio.sleep(0.01)\n    return await p\nresult = asyncio.run(main())", "Echo: later")

# -- dynamic programs
v("d01_loop_over_entities", "Loop variables over a result.",
  "memory_create_entities(entities=[{'name': 'v_loop_a', 'entityType': 'probe', 'observations': ['a']}, {'name': 'v_loop_b', 'entityType': 'probe', 'observations': ['b', 'c']}])\ng = memory_open_nodes(names=['v_loop_a', 'v_loop_b'])\nout = {}\nfor e in g['entities']:\n    out[e['name']] = len(e['observations'])\nresult = out",
  {"v_loop_a": 1, "v_loop_b": 2})
v("d02_comprehension_fields", "Comprehension over a result.",
  "memory_create_entities(entities=[{'name': 'v_comp', 'entityType': 'probe', 'observations': []}])\ng = memory_open_nodes(names=['v_comp'])\nresult = [e['entityType'] for e in g['entities']]", ["probe"])
v("d03_generator_sum", "Generator expression over a result.",
  "memory_create_entities(entities=[{'name': 'v_gen', 'entityType': 'probe', 'observations': ['1', '2', '3']}])\ng = memory_open_nodes(names=['v_gen'])\nresult = sum(len(e['observations']) for e in g['entities'])", 3)
v("d04_alias_and_index", "Alias of a result list.",
  "memory_create_entities(entities=[{'name': 'v_alias', 'entityType': 'probe', 'observations': ['z']}])\ng = memory_open_nodes(names=['v_alias'])\nitems = g['entities']\nresult = items[0]['observations'][0]", "z")
v("d05_relations", "Relations created and read back.",
  "memory_create_entities(entities=[{'name': 'v_r1', 'entityType': 'p', 'observations': []}, {'name': 'v_r2', 'entityType': 'p', 'observations': []}])\nmemory_create_relations(relations=[{'from': 'v_r1', 'to': 'v_r2', 'relationType': 'knows'}])\ng = memory_open_nodes(names=['v_r1', 'v_r2'])\nresult = [(r['from'], r['relationType'], r['to']) for r in g['relations']]",
  [["v_r1", "knows", "v_r2"]])
v("d06_computed_arguments", "Arguments computed at run time.",
  "xs = [1, 2, 3]\nparts = [everything_get_sum(a=x, b=x * 10) for x in xs]\nresult = [p.split()[-1] for p in parts]", ["11.", "22.", "33."])
v("d07_text_methods", "A text result used as text.",
  "r = everything_echo(message='Hello World')\nresult = [r.lower(), r[0], len(r), 'World' in r]", ["echo: hello world", "E", 17, True])
v("d08_sum_parse", "Parse a number out of a text result.",
  "s = everything_get_sum(a=40, b=2)\nresult = int(s.rsplit(' ', 1)[1].rstrip('.'))", 42)
v("d09_result_call", ".result() then fields.",
  "w = everything_get_structured_content(location='New York').result()\nresult = type(w['temperature']).__name__ in ('int', 'float')", True)
v("d10_attribute_access", "Attribute access on a dict result.",
  "w = everything_get_structured_content(location='Los Angeles')\nresult = isinstance(w.conditions, str)", True)
v("d11_gather_builtin", "The runtime's gather.",
  "rs = gather(everything_echo(message='g1'), everything_echo(message='g2'))\nresult = [r['value'] for r in rs]", ["Echo: g1", "Echo: g2"])
v("d12_enum_from_variable", "An enum value held in a variable.",
  "kinds = ['error', 'success']\nout = [everything_get_annotated_message(messageType=k) for k in kinds]\nresult = len(out)", 2)
v("d13_optional_none", "None for an optional argument means not given.",
  "r = filesystem_read_text_file(path='notes.md', head=None, tail=None)\nresult = r['content'].splitlines()[0]", "# notes")
v("d14_read_head", "head= as a number.",
  "r = filesystem_read_text_file(path='notes.md', head=2)\nresult = r['content'].splitlines()", ["# notes", "hello"])
v("d15_list_directory", "list_directory parsed.",
  "r = filesystem_list_directory(path='.')\nresult = sorted(l.split(' ', 1)[1] for l in r['content'].splitlines())", ["notes.md", "todo.txt"])
v("d16_read_multiple", "read_multiple_files with a list.",
  "r = filesystem_read_multiple_files(paths=['todo.txt'])\nresult = 'a' in r['content']", True)
v("d17_search_files", "search_files.",
  "r = filesystem_search_files(path='.', pattern='*.md')\nresult = r['content'].strip().endswith('notes.md')", True)
v("d18_edit_dry_run", "edit_file with the right nested keys, dry run.",
  "r = filesystem_edit_file(path='notes.md', edits=[{'oldText': 'hello', 'newText': 'howdy'}], dryRun=True)\nresult = 'howdy' in r['content']", True)
v("d19_write_then_read", "A write then a read of the same file (program order).",
  "filesystem_write_file(path='v_out.txt', content='fresh')\nr = filesystem_read_text_file(path='v_out.txt')\nresult = r['content']", "fresh")
v("d20_add_observations", "add_observations with contents.",
  "memory_create_entities(entities=[{'name': 'v_obs', 'entityType': 'p', 'observations': []}])\nmemory_add_observations(observations=[{'entityName': 'v_obs', 'contents': ['new']}])\ng = memory_open_nodes(names=['v_obs'])\nresult = g['entities'][0]['observations']", ["new"])
v("d21_delete_then_read", "Delete then read (program order).",
  "memory_create_entities(entities=[{'name': 'v_del', 'entityType': 'p', 'observations': []}])\nmemory_delete_entities(entityNames=['v_del'])\ng = memory_open_nodes(names=['v_del'])\nresult = len(g['entities'])", 0)
v("d22_keyword_spread", "**kwargs spread.",
  "args = {'a': 5, 'b': 6}\nresult = everything_get_sum(**args).split()[-1]", "11.")
v("d23_positional", "Positional arguments.",
  "result = everything_get_sum(7, 8).split()[-1]", "15.")
v("d24_floats", "Floats and negative numbers.",
  "result = everything_get_sum(a=-1.5, b=0.5).split()[-1]", "-1.")
v("d25_resource_links_count", "A count within the bounds.",
  "r = everything_get_resource_links(count=2)\nresult = isinstance(r, (dict, str, list))", True)
v("d26_user_function_named_like_sdk", "The program's own function shadows a name.",
  "def everything_echo(message):\n    return 'mine:' + str(message)\nresult = everything_echo(message=42)", "mine:42")
v("d27_own_namespace_object", "A user object called mcp.",
  "class NS:\n    def echo(self, message):\n        return message * 2\nmcp = NS()\nresult = mcp.echo(message='ab')", "abab")
v("d28_search_nodes_loop", "search_nodes then a loop with .get().",
  "memory_create_entities(entities=[{'name': 'v_search_me', 'entityType': 'needle', 'observations': ['hay']}])\nfound = memory_search_nodes(query='v_search_me')\nresult = [e.get('entityType') for e in found['entities']]", ["needle"])
v("d29_nested_loops", "Nested loops over a result.",
  "memory_create_entities(entities=[{'name': 'v_nest', 'entityType': 'p', 'observations': ['ab', 'cd']}])\ng = memory_open_nodes(names=['v_nest'])\nout = []\nfor e in g['entities']:\n    for o in e['observations']:\n        out.append(o.upper())\nresult = out", ["AB", "CD"])
v("d30_json_dumps", "json.dumps of a result.",
  "import json\nw = everything_get_structured_content(location='Chicago')\nresult = sorted(json.loads(json.dumps(w)))", ["conditions", "humidity", "temperature"])
v("d31_dict_comprehension", "Dict comprehension over results.",
  "cities = ['Chicago', 'New York']\nws = {c: everything_get_structured_content(location=c) for c in cities}\nresult = sorted(k for k, w in ws.items() if 'temperature' in w)", ["Chicago", "New York"])
v("d32_try_except_keyerror", "A guarded read of a missing key.",
  "w = everything_get_structured_content(location='Chicago')\ntry:\n    x = w['wind']\nexcept KeyError:\n    x = 'none'\nresult = x", "none")
v("d33_directory_tree", "directory_tree with excludePatterns as a list.",
  "import json\nr = filesystem_directory_tree(path='.', excludePatterns=['*.txt'])\nresult = sorted(n['name'] for n in json.loads(r['content']))", ["notes.md"])

for name, (why, code, result) in V.items():
    with open(os.path.join("valid", name + ".py"), "w") as fh:
        fh.write("# %s\n# result: %s\n%s\n" % (why, json.dumps(result), code))
print(len(V))
