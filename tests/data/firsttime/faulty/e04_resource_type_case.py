# Enum value in lower case.
# expect: Did you mean 'Text'?
result = everything_get_resource_reference(resourceType='text')
