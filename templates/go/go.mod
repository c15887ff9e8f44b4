module __BINARY__

go 1.21
