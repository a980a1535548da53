"""The daemon process: the socket and its relay, the gRPC servicer, fair call
scheduling, housekeeping and upkeep, main."""
