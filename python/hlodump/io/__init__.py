"""The read path: what to read (plan), where it is (paths: local files, directories, globs,
archives; stores: object stores and fsspec URLs), and the progress bar of a read."""
