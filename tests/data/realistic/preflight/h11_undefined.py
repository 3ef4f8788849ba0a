# Held out (written after the fixes, measured before tuning): undefined.
# class: heldout
# expect: Python writes `None`
res = everything_echo(message='hi')
if res == undefined:
    print('none')
