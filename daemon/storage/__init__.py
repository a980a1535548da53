"""The durable layer: a database file, its folder and its companions (WAL
recovery, journal of deferred rows, vector snapshot), and the files tools read and write."""
