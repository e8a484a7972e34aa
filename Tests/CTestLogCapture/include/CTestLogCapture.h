// Nothing to import: capture.c only runs a constructor.
