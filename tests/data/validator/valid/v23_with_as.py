# with ... as binds a name.
import contextlib
import io
with contextlib.redirect_stdout(io.StringIO()) as filesystem_buffer:
    print("hidden")
result = filesystem_buffer.getvalue()
