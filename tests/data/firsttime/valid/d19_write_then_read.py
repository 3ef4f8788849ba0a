# A write then a read of the same file (program order).
# result: "fresh"
filesystem_write_file(path='v_out.txt', content='fresh')
r = filesystem_read_text_file(path='v_out.txt')
result = r['content']
