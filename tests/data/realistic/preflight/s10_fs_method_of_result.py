# Listing then reading: the read is called on the listing's result.
# class: shapes
# expect: filesystem_read_text_file(
listing = filesystem_list_directory(path='notes')
names = [l.split()[-1] for l in listing['content'].splitlines() if l.endswith('.md')]
texts = {n: listing.read_text_file(path='notes/' + n)['content'] for n in names}
result = texts
