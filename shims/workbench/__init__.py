"""The workbench: a local web page to see, search, correct and forget what memnest holds.

`memnest-ctl ui` serves it on loopback. It is a client of the daemon like memnest-ctl (every
read and edit is a tool call through the contract), so it works against a remote daemon too.
guard.py keeps other sites and local users out; pages.py renders; views.py reads; actions.py
changes; app.py puts them together; launch.py serves it.
"""
