# outputType misspelled.
# expect: Did you mean 'resourceLink'?
result = everything_gzip_file_as_resource(outputType='resourcelink')
