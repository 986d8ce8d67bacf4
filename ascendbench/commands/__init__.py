"""One module per command or command group; cli.py only registers them."""
