# One-off writer of the faulty corpus (kept for review; the .py files are the corpus).
import os
F = {}
def f(name, why, code, *expects):
    F[name] = (why, code, expects)

# -- literal types
f("t01_sum_string_number", "A number written as a string.", "result = everything_get_sum(a='1', b=2)",
  "`a` must be number (float), got str '1'", "Write the number without quotes: 1")
f("t02_echo_int", "An int where text is required.", "result = everything_echo(message=42)",
  "`message` must be string (str), got int 42", 'Write it as a string: "42"')
f("t03_bool_is_not_a_number", "Python's True is not a number.", "result = everything_get_sum(a=True, b=2)",
  "`a` must be number (float), got bool True")
f("t04_count_as_string", "A count written as a string.", "result = everything_get_resource_links(count='3')",
  "`count` must be number (float), got str '3'")
f("t05_path_as_int", "A path that is a number.", "result = filesystem_read_text_file(path=123)",
  "`path` must be string (str), got int 123")
f("t06_head_as_string", "head= written as a string.", "result = filesystem_read_text_file(path='notes.md', head='5')",
  "`head` must be number (float), got str '5'")
f("t07_exclude_patterns_str", "A list argument given one string.", "result = filesystem_directory_tree(path='.', excludePatterns='*.md')",
  "`excludePatterns` must be array (list), got str '*.md'", "Wrap it in a list: ['*.md']")
f("t08_paths_str", "read_multiple_files with one string.", "result = filesystem_read_multiple_files(paths='notes.md')",
  "`paths` must be array (list), got str 'notes.md'")
f("t09_entity_names_str", "A name where a list of names is required.", "result = memory_delete_entities(entityNames='bob')",
  "`entityNames` must be array (list)")
f("t10_open_nodes_str", "open_nodes with one name.", "result = memory_open_nodes(names='alice')",
  "`names` must be array (list), got str 'alice'")
f("t11_include_image_yes", "A flag written as text.", "result = everything_get_annotated_message(messageType='error', includeImage='yes')",
  "`includeImage` must be boolean (bool), got str 'yes'")
f("t12_include_image_true_str", "'true' as a string.", "result = everything_get_annotated_message(messageType='debug', includeImage='true')",
  "`includeImage` must be boolean (bool)", "Write True (no quotes)")
f("t13_query_none", "None where text is required.", "result = memory_search_nodes(query=None)",
  "`query` must be string (str), got NoneType None")
f("t14_positional_type", "A positional literal of the wrong type.", "result = everything_echo(3.5)",
  "`message` must be string (str), got float 3.5")
f("t15_duration_list", "A list where a number is required.", "result = everything_trigger_long_running_operation(duration=[1], steps=1)",
  "`duration` must be number (float), got a list")

# -- enums
f("e01_message_type_warning", "An enum value that does not exist.", "result = everything_get_annotated_message(messageType='warning')",
  "`messageType` must be one of 'error', 'success', 'debug'; got 'warning'")
f("e02_location_boston", "A city that is not offered.", "result = everything_get_structured_content(location='Boston')",
  "`location` must be one of 'New York', 'Chicago', 'Los Angeles'; got 'Boston'")
f("e03_location_case", "Right city, wrong case.", "w = everything_get_structured_content(location='chicago')\nresult = w['temperature']",
  "got 'chicago'. Did you mean 'Chicago'?")
f("e04_resource_type_case", "Enum value in lower case.", "result = everything_get_resource_reference(resourceType='text')",
  "Did you mean 'Text'?")
f("e05_resource_type_image", "An enum value from another API.", "result = everything_get_resource_reference(resourceType='Image', resourceId=1)",
  "`resourceType` must be one of 'Text', 'Blob'; got 'Image'")
f("e06_sort_by_date", "sortBy that is not offered.", "result = filesystem_list_directory_with_sizes(path='.', sortBy='date')",
  "`sortBy` must be one of 'name', 'size'; got 'date'")
f("e07_output_type", "outputType misspelled.", "result = everything_gzip_file_as_resource(outputType='resourcelink')",
  "Did you mean 'resourceLink'?")
f("e08_location_abbrev", "An abbreviation.", "result = everything_get_structured_content(location='NYC')",
  "`location` must be one of 'New York', 'Chicago', 'Los Angeles'; got 'NYC'")
f("e09_enum_in_loop", "An enum value inside a loop body.", "out = []\nfor i in range(3):\n    out.append(everything_get_annotated_message(messageType='info'))\nresult = len(out)",
  "got 'info'", "(line 3)")

# -- nested shapes
f("n01_entity_missing_observations", "An entity without observations.",
  "result = memory_create_entities(entities=[{'name': 'ada', 'entityType': 'person'}])",
  "`entities[0]` is missing the required key `observations`")
f("n02_entity_type_key", "`type` used for `entityType`.",
  "result = memory_create_entities(entities=[{'name': 'ada', 'type': 'person', 'observations': ['math']}])",
  "`entities[0]` has `type` where the key is `entityType`: rename it")
f("n03_entities_dict", "One entity dict where a list is required.",
  "result = memory_create_entities(entities={'name': 'ada', 'entityType': 'person', 'observations': []})",
  "`entities` must be array (list), got a dict", "Pass a list of such dicts")
f("n04_observations_str", "Observations as one string.",
  "n = 'ada'\nresult = memory_create_entities(entities=[{'name': n, 'entityType': 'person', 'observations': 'math'}])",
  "`entities[0].observations` must be array (list), got str 'math'", "Wrap it in a list: ['math']")
f("n05_entity_name_int", "An entity name that is a number.",
  "result = memory_create_entities(entities=[{'name': 7, 'entityType': 'number', 'observations': []}])",
  "`entities[0].name` must be string (str), got int 7")
f("n06_relation_missing_type", "A relation without relationType.",
  "result = memory_create_relations(relations=[{'from': 'a', 'to': 'b'}])",
  "`relations[0]` is missing the required key `relationType`")
f("n07_relation_source_target", "source/target for from/to.",
  "result = memory_create_relations(relations=[{'source': 'a', 'target': 'b', 'relationType': 'knows'}])",
  "`relations[0]` is missing the required key `from`", "`relations[0]` is missing the required key `to`")
f("n08_add_observations_key", "observations for contents.",
  "result = memory_add_observations(observations=[{'entityName': 'ada', 'observations': ['x']}])",
  "`observations[0]` has `observations` where the key is `contents`: rename it")
f("n09_delete_observations_name", "name for entityName.",
  "result = memory_delete_observations(deletions=[{'name': 'ada', 'observations': ['x']}])",
  "`deletions[0]` has `name` where the key is `entityName`: rename it")
f("n10_edit_old_new", "old/new for oldText/newText.",
  "result = filesystem_edit_file(path='notes.md', edits=[{'old': 'a', 'new': 'b'}], dryRun=True)",
  "`edits[0]` has `old` where the key is `oldText`: rename it", "`edits[0]` has `new` where the key is `newText`")
f("n11_edits_dict", "One edit dict where a list is required.",
  "result = filesystem_edit_file(path='notes.md', edits={'oldText': 'a', 'newText': 'b'})",
  "`edits` must be array (list), got a dict")
f("n12_second_entity_broken", "The second of two entities is broken.",
  "result = memory_create_entities(entities=[\n    {'name': 'a', 'entityType': 't', 'observations': []},\n    {'name': 'b', 'entityTyp': 't', 'observations': []},\n])",
  "`entities[1]` has `entityTyp` where the key is `entityType`: rename it", "(line 1)")
f("n13_observation_items_int", "Observation items that are numbers.",
  "result = memory_add_observations(observations=[{'entityName': 'ada', 'contents': [1, 2]}])",
  "`observations[0].contents[0]` must be string (str), got int 1")
f("n14_entity_list_of_str", "Names where entity dicts are required.",
  "result = memory_create_entities(entities=['ada', 'bob'])",
  "`entities[0]` must be object (dict), got str 'ada'")

# -- bounds
f("b01_count_zero", "Below the minimum.", "result = everything_get_resource_links(count=0)", "`count` must be >= 1, got 0")
f("b02_count_eleven", "Above the maximum.", "result = everything_get_resource_links(count=11)", "`count` must be <= 10, got 11")
f("b03_paths_empty", "An empty list where one item is needed.", "result = filesystem_read_multiple_files(paths=[])",
  "`paths` needs at least 1 item(s), got 0")

# -- JS-style and import-style names
f("j01_mcp_server_tool", "mcp.<server>.<tool>.", "result = mcp.everything.echo(message='hi')",
  "`mcp.everything.echo` is not defined (line 1)", "Call `everything_echo(...)`")
f("j02_server_tool", "<server>.<tool>.", "result = everything.echo(message='hi')", "Call `everything_echo(...)`")
f("j03_tools_namespace", "tools.<server>.<tool>.", "g = tools.memory.read_graph()\nresult = g", "Call `memory_read_graph(...)`")
f("j04_camel_tool", "camelCase tool as an attribute.", "result = everything.getSum(a=1, b=2)", "Call `everything_get_sum(...)`")
f("j05_from_import", "from <server> import <tool>.", "from everything import echo\nresult = echo(message='hi')",
  "`from everything import echo` (line 1)", "Call `everything_echo(...)`")
f("j06_import_server", "import <server>.", "import memory\nresult = memory.read_graph()",
  "`import memory` (line 1)", "memory_read_graph")
f("j07_from_import_two", "Two tools imported.", "from memory import read_graph, search_nodes\nresult = [read_graph(), search_nodes(query='x')]",
  "Call `memory_read_graph(...)`", "Call `memory_search_nodes(...)`")
f("j08_mcp_filesystem", "mcp namespace, filesystem.", "dirs = mcp.filesystem.list_allowed_directories()\nresult = dirs",
  "Call `filesystem_list_allowed_directories(...)`")
f("j09_camel_memory", "camelCase memory tool.", "result = memory.readGraph()", "Call `memory_read_graph(...)`")
f("j10_await_js_style", "await on a JS-style name.", "result = await mcp.everything.echo(message='hi')", "Call `everything_echo(...)`")
f("j11_mcp_full_name", "mcp.<sdk name>.", "result = mcp.everything_get_sum(a=1, b=2)", "Call `everything_get_sum(...)` directly")
f("j12_inside_async_def", "JS-style name inside an async helper.",
  "import asyncio\nasync def main():\n    return await everything.echo(message='x')\nresult = asyncio.run(main())",
  "`everything.echo` is not defined (line 3)")

# -- a dict as the only positional argument
f("d01_sum_dict", "Options object for get_sum.", "result = everything_get_sum({'a': 1, 'b': 2})",
  "pass arguments as keywords: everything_get_sum(a=1, b=2)")
f("d02_echo_dict", "Options object for echo.", "result = everything_echo({'message': 'hi'})",
  "pass arguments as keywords: everything_echo(message='hi')")
f("d03_entities_dict", "Options object for create_entities.",
  "result = memory_create_entities({'entities': [{'name': 'a', 'entityType': 't', 'observations': []}]})",
  "pass arguments as keywords: memory_create_entities(entities=")
f("d04_read_dict", "Options object for read_text_file.", "result = filesystem_read_text_file({'path': 'notes.md', 'head': 1})",
  "pass arguments as keywords: filesystem_read_text_file(path='notes.md', head=1)")

# -- shapes followed through loops, comprehensions, aliases, .result(); text results
f("s01_comprehension_typo", "A typo on a comprehension variable.", "g = memory_read_graph()\nresult = [e['nme'] for e in g['entities']]",
  "memory_read_graph: result['entities'][…] has no field `nme` (line 2). Did you mean `name`?")
f("s02_for_loop_typo", "A typo on a loop variable.", "graph = memory_read_graph()\nout = []\nfor e in graph['entities']:\n    out.append(e['entityTyp'])\nresult = out",
  "has no field `entityTyp` (line 4). Did you mean `entityType`?")
f("s03_relation_source", "Relations have from/to, not source.", "r = memory_read_graph()\nresult = []\nfor rel in r['relations']:\n    result.append(rel['source'])",
  "memory_read_graph: result['relations'][…] has no field `source` (line 4)")
f("s04_alias_typo", "An alias of a result list.", "g = memory_read_graph()\nitems = g['entities']\nresult = [items[0]['nam']] if items else []",
  "result['entities'][0] has no field `nam`")
f("s05_generator_typo", "A typo inside a generator expression.", "g = memory_read_graph()\nresult = sum(len(e['observatons']) for e in g['entities'])",
  "has no field `observatons` (line 2). Did you mean `observations`?")
f("s06_result_call_then_loop", "Through .result().", "g = memory_read_graph().result()\nresult = [e['entity_type'] for e in g['entities']]",
  "has no field `entity_type`")
f("s07_text_result_subscript", "Subscript on a text result.", "r = everything_echo(message='hi')\nresult = r['text']",
  "everything_echo: result is text (str), not a dict, so result['text'] fails (line 2)")
f("s08_text_result_attribute", "Attribute on a text result.", "r = everything_get_sum(a=1, b=2)\nresult = r.result_value",
  "everything_get_sum: result is text (str) and has no attribute `result_value` (line 2)")
f("s09_list_str_key", "A str key on a list.", "g = memory_read_graph()\nresult = g['entities']['name']",
  "result['entities'] is a list, so result['entities']['name'] fails (line 2)")
f("s10_nested_loops", "Observations are text.", "g = memory_read_graph()\nfor e in g['entities']:\n    for o in e['observations']:\n        print(o['text'])",
  "result['entities'][…]['observations'][…] is text (str)")
f("s11_search_nodes_loop", "search_nodes result in a loop.", "found = memory_search_nodes(query='ada')\nresult = {e['name']: e['type'] for e in found['entities']}",
  "memory_search_nodes: result['entities'][…] has no field `type`")
f("s12_alias_rebinding", "A plain re-binding of a result.", "r = memory_read_graph()\ng = r\nresult = g['relation']",
  "memory_read_graph: result has no field `relation`", "Did you mean `relations`?")
f("s13_in_async_helper", "A typo in an async helper.", "import asyncio\nasync def names():\n    g = await memory_read_graph()\n    return [e['nmae'] for e in g['entities']]\nresult = asyncio.run(names())",
  "has no field `nmae`")

import re
for name, (why, code, expects) in F.items():
    off = 1 + len(expects)  # the header lines: code line N is file line N + off
    expects = [re.sub(r"\(line (\d+)\)", lambda m: "(line %d)" % (int(m.group(1)) + off), e) for e in expects]
    with open(os.path.join("faulty", name + ".py"), "w") as fh:
        fh.write("# %s\n" % why)
        for e in expects:
            fh.write("# expect: %s\n" % e)
        fh.write(code + "\n")
print(len(F))
