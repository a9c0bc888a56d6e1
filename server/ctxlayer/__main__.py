from ctxlayer.cli import main

raise SystemExit(main())
