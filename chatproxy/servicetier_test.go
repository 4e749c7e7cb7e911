package chatproxy

import ()
