"""The code a memory cites: finding citations in a memory's text (mentions), anchoring them
to the workspace's files (anchors), and checking later whether that code is still there,
moved or changed (anchors.check), with git's help for renames (git).

The workspace is not trusted (DESIGN.md 9): files are read without following any symbolic
link, only regular files of bounded size; git runs with repository config unable to start
programs. Nothing here writes anything.
"""
