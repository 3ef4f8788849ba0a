# An enum value from another API.
# expect: `resourceType` must be one of 'Text', 'Blob'; got 'Image'
result = everything_get_resource_reference(resourceType='Image', resourceId=1)
