# A flag written as text.
# expect: `includeImage` must be boolean (bool), got str 'yes'
result = everything_get_annotated_message(messageType='error', includeImage='yes')
