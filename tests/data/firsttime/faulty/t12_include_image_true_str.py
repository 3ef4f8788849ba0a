# 'true' as a string.
# expect: `includeImage` must be boolean (bool)
# expect: Write True (no quotes)
result = everything_get_annotated_message(messageType='debug', includeImage='true')
