# Held out (written after the fixes, measured before tuning): structured temp.
# class: heldout
# expect: has no field `temp`
w = everything_get_structured_content(location='Chicago')
msg = 'temp ' + str(w['temp'])
result = msg
