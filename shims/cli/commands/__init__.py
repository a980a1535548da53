"""The subcommands of memnest-ctl, one module per group, each a tuple COMMANDS of Command."""
