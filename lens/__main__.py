"""python3 -m lens: the command line (lens/cli.py)."""
import sys

from lens.cli import main


sys.exit(main(sys.argv))
