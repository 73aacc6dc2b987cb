"""`python -m zeroloss.cli`."""

import sys

from zeroloss.cli.main import main

sys.exit(main())
